import PostgresData
import PostgresDataTesting

/// A container for `model` on a fresh database of the test server, its schema created.
func loadedContainer(_ model: ManagedObjectModel) async throws -> PersistentContainer {
    let configuration = try await TestDatabase.fresh(prefix: "pd_coexistence")
    let container = PersistentContainer(name: "Coexistence", model: model)
    try await container.loadPersistentStores(configuration: configuration, options: .init(createSchemaIfMissing: true))
    return container
}
