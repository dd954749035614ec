/// A value, both encodable and decodable.
public typealias PostgresCodable = PostgresEncodable & PostgresDecodable
