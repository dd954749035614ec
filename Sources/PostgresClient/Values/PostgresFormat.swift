/// Whether a value travels as text or in PostgreSQL's binary format.
public enum PostgresFormat: Int32, Sendable {
    case text = 0
    case binary = 1
}
