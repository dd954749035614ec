import CLibPQ
import Foundation

/// Options for one statement.
public struct QueryOptions: Sendable {
    /// Cancels the statement (SQLSTATE 57014, ``PostgresError/Kind/timedOut``) when it runs longer.
    public var timeout: Duration?
    /// Binary (the default) or text results. Text returns every value in its canonical text
    /// form, which can be read as `String` whatever its type.
    public var resultFormat: PostgresFormat

    public init(timeout: Duration? = nil, resultFormat: PostgresFormat = .binary) {
        self.timeout = timeout
        self.resultFormat = resultFormat
    }

    public static let `default` = QueryOptions()
}
