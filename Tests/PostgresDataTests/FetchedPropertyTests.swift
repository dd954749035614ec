import Foundation
import PostgresClient
@testable import PostgresData
import PostgresDataTesting
import Testing

@Entity final class Shelf: ManagedObject {
    var name: String = ""
    var minimumPrice: Double = 0
    @Relationship(deleteRule: .cascade, inverse: \Book.shelf) var books: Set<Book>
    @Fetched("shelf == $FETCH_SOURCE AND price >= $FETCH_SOURCE.minimumPrice", sortDescriptors: [FetchSortDescriptor(key: "price", ascending: false)])
    var expensiveBooks: [Book]
}

@Entity final class Book: ManagedObject {
    var title: String = ""
    var price: Double = 0
    var shelf: Shelf?
}

let shelfModel = ManagedObjectModel(Shelf.self, Book.self)

/// Fetched properties (Core Data's `NSFetchedPropertyDescription`): a stored fetch about
/// its owner, loaded for many owners in one query and cached until the owner is refreshed.
@Suite struct FetchedPropertyTests {
    @Test func oneQueryLoadsThePropertyForManyOwners() throws {
        let shelf = try #require(shelfModel.entitiesByName["Shelf"])
        let book = try #require(shelfModel.entitiesByName["Book"])
        let property = try #require(shelf.fetchedProperties.first)
        #expect(property.destinationEntityName == "Book")
        let plan = try FetchedPropertyPlan(property, of: shelf, destination: book, owners: [1, 2])
        #expect(plan.sql == #"SELECT t."id", t.xmin, t."title", t."price", t."shelf_id", s.k FROM unnest($1::bigint[]) AS s(k) JOIN "shelf" AS src ON src."id" = s.k CROSS JOIN "book" AS t WHERE ((t."shelf_id" = src."id") AND (t."price" >= src."minimum_price")) ORDER BY s.k, t."price" DESC NULLS LAST, t."id""#)
        #expect(plan.bindings.count == 1)
        // A fetched property is not a column.
        #expect(!shelfModel.createSchemaSQL().contains("expensive"))
    }

    @Test func aFetchedPropertyOfAnUnknownEntityIsAModelProblem() {
        let owner = EntityDescription(name: "Owner", properties: [.attribute(AttributeDescription(name: "size", type: .integer64))],
                                      fetchedProperties: [FetchedPropertyDescription(name: "things", destinationEntityName: "Thing",
                                                                                     predicateFormat: "size == $FETCH_SOURCE.size")])
        #expect(ManagedObjectModel(entities: [owner]).problems == [#"Owner.things fetches entity "Thing", which is not in the model"#])
    }

    @Test func readsAreCachedUntilTheOwnerIsRefreshed() async throws {
        let configuration = try await TestDatabase.fresh(prefix: "pd_fetched")
        let container = PersistentContainer(name: "Shelves", model: shelfModel)
        try await container.loadPersistentStores(configuration: configuration, options: .init(createSchemaIfMissing: true))
        let (first, second) = try await container.performBackgroundTask { context in
            func shelf(_ name: String, minimum: Double, prices: [Double]) -> Shelf {
                let shelf = Shelf(context: context)
                shelf.name = name
                shelf.minimumPrice = minimum
                for (index, price) in prices.enumerated() {
                    let book = Book(context: context)
                    book.title = "\(name)\(index)"
                    book.price = price
                    book.shelf = shelf
                }
                return shelf
            }
            let first = shelf("a", minimum: 10, prices: [5, 12, 30])
            let second = shelf("b", minimum: 1, prices: [2])
            try context.save()
            return (first.objectID, second.objectID)
        }
        let context = container.newBackgroundContext()
        context.retainsRegisteredObjects = true  // read by ID in later blocks
        try await context.perform {
            let a = try #require(try context.existingObject(with: first) as? Shelf)
            let b = try #require(try context.existingObject(with: second) as? Shelf)
            // Matching rows, in the property's order; the other registered shelf loaded with it.
            #expect(a.expensiveBooks.map(\.title) == ["a2", "a1"])
            #expect(context.fetchedPropertyValues.count == 2)
            #expect(b.expensiveBooks.map(\.title) == ["b0"])
            #expect((a.value(forKey: "expensiveBooks") as? [ManagedObject])?.count == 2)
            // A new shelf has no row to match.
            let fresh = Shelf(context: context)
            #expect(fresh.expensiveBooks.isEmpty)
            context.delete(fresh)
        }
        try await container.performBackgroundTask { other in
            let shelf = try #require(try other.existingObject(with: first) as? Shelf)
            let book = Book(context: other)
            book.title = "a3"
            book.price = 99
            book.shelf = shelf
            try other.save()
        }
        try await context.perform {
            let a = try #require(try context.existingObject(with: first) as? Shelf)
            // Cached, as in Core Data, until the object is refreshed.
            #expect(a.expensiveBooks.count == 2)
            context.refresh(a, mergeChanges: false)
            #expect(a.expensiveBooks.map(\.title) == ["a3", "a2", "a1"])
            #expect(throws: PostgresDataError.self) { try a.fetchedObjects(forKey: "cheapBooks") }
        }
    }
}
