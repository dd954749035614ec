import Foundation
import PostgresData
import PostgresDataTesting
import Testing

/// Generic code: a model built in code, objects read and written by key.
@Suite struct UntypedModelTests {
    static func model() -> ManagedObjectModel {
        let author = EntityDescription(name: "Author", properties: [
            .attribute(AttributeDescription(name: "name", type: .string, maxLength: 40)),
            .relationship(RelationshipDescription(name: "books", destination: "Book", inverse: "author", toMany: true,
                                                  deleteRule: .cascade)),
            .relationship(RelationshipDescription(name: "portrait", destination: "Portrait", inverse: "author")),
        ])
        let book = EntityDescription(name: "Book", properties: [
            .attribute(AttributeDescription(name: "title", type: .string)),
            .attribute(AttributeDescription(name: "pages", type: .integer32, defaultValue: .integer(100), minValue: 1)),
            .relationship(RelationshipDescription(name: "author", destination: "Author", inverse: "books", isOptional: false)),
        ])
        let portrait = EntityDescription(name: "Portrait", properties: [
            .attribute(AttributeDescription(name: "image", type: .binaryData, isOptional: true)),
            .relationship(RelationshipDescription(name: "author", destination: "Author", inverse: "portrait")),
        ])
        return ManagedObjectModel(entities: [author, book, portrait])
    }

    @Test func objectsOfACodeBuiltModelAreReadAndWrittenByKey() async throws {
        let model = Self.model()
        #expect(model.problems.isEmpty)
        let container = PersistentContainer(name: "Library", model: model)
        try await container.loadPersistentStores(configuration: try await TestDatabase.fresh(prefix: "pd_untyped"),
                                                 options: .init(createSchemaIfMissing: true))
        let authorEntity = try #require(model.entitiesByName["Author"])
        let bookEntity = try #require(model.entitiesByName["Book"])
        let portraitEntity = try #require(model.entitiesByName["Portrait"])
        try await container.performBackgroundTask { context in
            let author = ManagedObject(entity: authorEntity, insertInto: context)
            try author.setValue("Le Guin", forKey: "name")
            let book = ManagedObject(entity: bookEntity, insertInto: context)
            try book.setValue("The Dispossessed", forKey: "title")
            try book.setValue(author, forKey: "author")
            #expect((author.value(forKey: "books") as? Set<ManagedObject>) == [book])
            #expect(book.value(forKey: "pages") as? Int == 100)
            // One-to-one: each side sees the other.
            let portrait = ManagedObject(entity: portraitEntity, insertInto: context)
            try portrait.setValue(author, forKey: "author")
            #expect(author.value(forKey: "portrait") as? ManagedObject === portrait)
            #expect(throws: PostgresDataError.self) { try book.setValue("many", forKey: "pages") }
            do {
                try book.setValue(1, forKey: "colour")
                Issue.record("an unknown key must throw")
            } catch let error as PostgresDataError {
                #expect(error.description == "Book has no property \"colour\"; its properties are title, pages, author")
            }
            try context.save()
        }
        try await container.performBackgroundTask { context in
            let books = try context.fetch(FetchRequest<ManagedObject>(entityName: "Book"))
            #expect(books.count == 1)
            let author = try #require(books.first?.value(forKey: "author") as? ManagedObject)
            #expect(author.value(forKey: "name") as? String == "Le Guin")
            #expect((author.value(forKey: "portrait") as? ManagedObject)?.entity.name == "Portrait")
            context.delete(author)
            try context.save()
        }
        #expect(try await container.rawIntegers("SELECT count(*) FROM book") == [0])
        #expect(try await container.rawIntegers("SELECT count(*) FROM portrait") == [1])
        #expect(try await container.rawIntegers("SELECT count(*) FROM author") == [0])
    }
}
