import Foundation

extension CodingUserInfoKey {
    /// The key under which a decoder's `userInfo` holds the ``ManagedObjectModel`` that
    /// decoded ``ManagedObjectID``s belong to.
    public static let managedObjectModel = CodingUserInfoKey(rawValue: "PostgresData.managedObjectModel")!
}

/// An object ID encodes as its URI (`"x-postgresdata://Item/p42"`), so that IDs can travel in
/// JSON (a job queue, a cache, a response) and come back.
///
/// Decoding needs the model the ID's entity belongs to, in the decoder's `userInfo`:
///
/// ```swift
/// let decoder = JSONDecoder()
/// decoder.userInfo[.managedObjectModel] = container.managedObjectModel
/// let id = try decoder.decode(ManagedObjectID.self, from: data)
/// ```
///
/// A temporary ID does not encode: no other context or process could use it; save first, or
/// call ``ManagedObjectContext/obtainPermanentIDs(for:)-4cry7``.
///
/// Core Data equivalent: none (`NSManagedObjectID` is not `Codable`; its `uriRepresentation()`
/// is what apps store, and so is this encoding).
extension ManagedObjectID: Codable {
    public func encode(to encoder: any Encoder) throws {
        guard !isTemporaryID else {
            throw EncodingError.invalidValue(self, EncodingError.Context(
                codingPath: encoder.codingPath,
                debugDescription: "\(self) is temporary: save its object (or obtain a permanent ID) before encoding it"))
        }
        var container = encoder.singleValueContainer()
        try container.encode(uriRepresentation().absoluteString)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let model = decoder.userInfo[.managedObjectModel] as? ManagedObjectModel else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription:
                "decoding a ManagedObjectID needs its model: set decoder.userInfo[.managedObjectModel]")
        }
        guard let uri = URL(string: text), let id = model.managedObjectID(forURIRepresentation: uri) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription:
                "\"\(text)\" is not the URI of a saved object of an entity of this model (x-postgresdata://Entity/p<key>)")
        }
        self = id
    }
}

extension ManagedObjectModel {
    /// The object ID a URI names, or nil when it names no entity of the model or a
    /// temporary ID.
    func managedObjectID(forURIRepresentation uri: URL) -> ManagedObjectID? {
        guard uri.scheme == "x-postgresdata", let entityName = uri.host, let entity = entitiesByName[entityName] else { return nil }
        let last = uri.lastPathComponent
        guard last.first == "p", let key = Int64(last.dropFirst()) else { return nil }
        return ManagedObjectID(entity: entity, primaryKey: key)
    }
}
