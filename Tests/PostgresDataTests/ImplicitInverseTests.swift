import Foundation
import PostgresClient
@testable import PostgresData
import PostgresDataTesting
import Testing

@Entity final class Memo: ManagedObject {
    var text: String = ""
    var writer: Writer?
    var stickers: Set<Sticky>
    var replyTo: Memo?
}

@Entity final class Writer: ManagedObject {
    var name: String = ""
}

@Entity final class Sticky: ManagedObject {
    var word: String = ""
}

let memoModel = ManagedObjectModel(Memo.self, Writer.self, Sticky.self)

/// Relationships declared without an inverse (Core Data allows them): the model adds an
/// implicit one, so the database stays consistent and nothing else changes.
@Suite struct ImplicitInverseTests {
    @Test func aRelationshipWithoutAnInverseGetsAnImplicitOne() throws {
        #expect(memoModel.problems.isEmpty)
        let writer = try #require(memoModel.entitiesByName["Writer"])
        let inverse = try #require(writer.relationshipsByName["_inverseOfMemoWriter"])
        #expect(inverse.isImplicitInverse && inverse.isToMany && inverse.inverseName == "writer")
        let sql = memoModel.createSchemaSQL()
        // A to-one stays a foreign key, nullified when its writer goes; a to-many is a join table.
        #expect(sql.contains(#"FOREIGN KEY ("writer_id") REFERENCES "writer" ("id") ON DELETE SET NULL"#))
        #expect(sql.contains(#"CREATE TABLE "memo_stickers""#))
        #expect(sql.contains(#"FOREIGN KEY ("reply_to_id") REFERENCES "memo" ("id") ON DELETE SET NULL"#))
    }

    @Test func anAmbiguousPairStaysAProblemThatAsksForAName() {
        let a = EntityDescription(name: "A", properties: [.relationship(RelationshipDescription(name: "x", destination: "B", inverse: ""))])
        let b = EntityDescription(name: "B", properties: [
            .relationship(RelationshipDescription(name: "y", destination: "A", inverse: "", toMany: true)),
            .relationship(RelationshipDescription(name: "z", destination: "A", inverse: "", toMany: true)),
        ])
        let problems = ManagedObjectModel(entities: [a, b]).problems
        #expect(problems.contains { $0.hasPrefix("A.x has no inverse, and more than one relationship of B could be it") })
        #expect(b.relationships.count == 2)
    }

    @Test func theyRelateObjectsWithoutChangingTheDestinations() async throws {
        let configuration = try await TestDatabase.fresh(prefix: "pd_noinverse")
        let container = PersistentContainer(name: "Memos", model: memoModel)
        try await container.loadPersistentStores(configuration: configuration, options: .init(createSchemaIfMissing: true))
        let (memoID, writerID, versions) = try await container.performBackgroundTask { context in
            let writer = Writer(context: context)
            writer.name = "ada"
            let stickers = ["red", "blue"].map { word in
                let sticky = Sticky(context: context)
                sticky.word = word
                return sticky
            }
            try context.save()
            let versions = stickers.map(\.rowVersion)
            let memo = Memo(context: context)
            memo.text = "first"
            memo.writer = writer
            memo.stickers = Set(stickers)
            let reply = Memo(context: context)
            reply.text = "second"
            reply.replyTo = memo
            try context.save()
            // The stickers were not written: an implicit inverse changes no object.
            #expect(stickers.map(\.rowVersion) == versions && !writer.hasChanges)
            return (memo.objectID, writer.objectID, versions)
        }
        #expect(versions.count == 2)
        try await container.performBackgroundTask { context in
            let memo = try #require(try context.existingObject(with: memoID) as? Memo)
            #expect(memo.writer?.name == "ada" && Set(memo.stickers.map(\.word)) == ["red", "blue"])
            let byWriter = try context.fetch(FetchRequest<Memo>(predicate: try FetchPredicate(format: "writer.name == 'ada' AND ANY stickers.word == 'red'")))
            #expect(byWriter.map(\.text) == ["first"])
            let replies = try context.fetch(FetchRequest<Memo>(predicate: try FetchPredicate(format: "replyTo.text == 'first'")))
            #expect(replies.map(\.text) == ["second"])
            // Deleting the writer: the memo's foreign key is nullified, in the context and the database.
            context.delete(try context.existingObject(with: writerID))
            try context.save()
            #expect(memo.writer == nil)
        }
        #expect(try await container.rawIntegers("SELECT count(*) FROM memo WHERE writer_id IS NULL") == [2])
    }
}
