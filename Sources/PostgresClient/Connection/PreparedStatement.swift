import CLibPQ
import Foundation

/// A statement prepared on one connection with ``Connection/prepare(_:parameterTypes:)``.
public struct PreparedStatement: Sendable {
    public let name: String
    public let sql: String
    let connection: Connection
}
