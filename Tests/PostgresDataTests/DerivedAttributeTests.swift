import Foundation
import PostgresClient
@testable import PostgresData
import PostgresDataTesting
import Testing

@Entity final class Basket: ManagedObject {
    var label: String = ""
    @Attribute(derived: "lines.@count") var lineCount: Int = 0
    @Attribute(derived: "lines.@sum.quantity") var totalQuantity: Int = 0
    @Attribute(derived: "stickers.@count") var stickerCount: Int = 0
    @Attribute(derived: "label + '!'") var shout: String = ""
    @Relationship(deleteRule: .cascade, inverse: \BasketLine.basket) var lines: Set<BasketLine>
    @Relationship(inverse: \Sticker.baskets) var stickers: Set<Sticker>
}

@Entity final class BasketLine: ManagedObject {
    var quantity: Int = 0
    var price: Double = 0
    @Attribute(derived: "price * quantity") var total: Double = 0
    var basket: Basket?
}

@Entity final class Sticker: ManagedObject {
    var name: String = ""
    var baskets: Set<Basket>
}

let derivedModel = ManagedObjectModel(Basket.self, BasketLine.self, Sticker.self)

/// Derived attributes (Core Data's `NSDerivedAttributeDescription`): generated columns from
/// the row, aggregates over a to-many relationship kept current by the database.
@Suite struct DerivedAttributeTests {
    func container() async throws -> PersistentContainer {
        let configuration = try await TestDatabase.fresh(prefix: "pd_derived")
        let container = PersistentContainer(name: "Baskets", model: derivedModel)
        try await container.loadPersistentStores(configuration: configuration, options: .init(createSchemaIfMissing: true))
        return container
    }

    @Test func theSchemaHasAGeneratedColumnAndTriggersForEachAggregate() throws {
        #expect(derivedModel.problems.isEmpty)
        let sql = derivedModel.createSchemaSQL()
        #expect(sql.contains(#""total" double precision GENERATED ALWAYS AS ((("price" * "quantity"))::double precision) STORED NOT NULL"#))
        #expect(sql.contains(#""shout" text GENERATED ALWAYS AS ((("label" || '!'::text))::text) STORED NOT NULL"#))
        #expect(sql.contains(#""line_count" bigint NOT NULL DEFAULT 0"#))
        #expect(sql.contains(#"CREATE TRIGGER "basket_line_basket_line_count_insert" AFTER INSERT ON "basket_line" REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT"#))
        #expect(sql.contains(#"CREATE TRIGGER "basket_line_count_start" BEFORE INSERT ON "basket" FOR EACH ROW"#))
        #expect(sql.contains(#"AFTER DELETE ON "basket_stickers""#))
        let basket = try #require(derivedModel.schemaDescription.table(named: "basket"))
        #expect(basket.columns.first { $0.name == "shout" }?.generationExpression != nil)
        #expect(basket.triggers.map(\.name).contains("basket_total_quantity_start"))
        // Derived attributes are not written by saves.
        let entity = try #require(derivedModel.entitiesByName["BasketLine"])
        #expect(entity.writableColumnIndices.map { entity.properties[$0].name } == ["quantity", "price", "basket"])
    }

    @Test func derivationsTheDatabaseCannotKeepAreModelProblems() {
        func problems(_ derivation: String, type: AttributeType = .integer64) -> [String] {
            var derived = AttributeDescription(name: "derived", type: type)
            derived.derivationExpression = derivation
            let owner = EntityDescription(name: "Owner", properties: [
                .attribute(AttributeDescription(name: "size", type: .integer64)),
                .attribute(derived),
                .relationship(RelationshipDescription(name: "parts", destination: "Part", inverse: "owner", toMany: true)),
                .relationship(RelationshipDescription(name: "boss", destination: "Part", inverse: "bossOf")),
            ])
            let part = EntityDescription(name: "Part", properties: [
                .attribute(AttributeDescription(name: "weight", type: .double)),
                .relationship(RelationshipDescription(name: "owner", destination: "Owner", inverse: "parts")),
                .relationship(RelationshipDescription(name: "bossOf", destination: "Owner", inverse: "boss", toMany: true)),
            ])
            return ManagedObjectModel(entities: [owner, part]).problems
        }
        #expect(problems("parts.@count").isEmpty)
        #expect(problems("size * 2").isEmpty)
        #expect(problems("parts.@sum.weight", type: .double).isEmpty)
        #expect(problems("parts.@avg.weight", type: .double).first?.contains("only @count and @sum") == true)
        #expect(problems("boss.@count").first?.contains("is not one") == true)
        #expect(problems("boss.weight").first?.contains("not an attribute of Owner") == true)
        #expect(problems("now()", type: .date).first?.contains("willSave") == true)
        #expect(problems("parts.@count", type: .string).first?.contains("non-optional number") == true)
        #expect(problems("size +").first?.contains("does not parse") == true)
    }

    @Test func aSaveReadsBackDerivedValuesAndAggregatesFollowEveryChange() async throws {
        let container = try await container()
        let context = container.newBackgroundContext()
        let basketID = try await context.perform {
            let basket = Basket(context: context)
            basket.label = "weekly"
            for quantity in [2, 3] {
                let line = BasketLine(context: context)
                line.quantity = quantity
                line.price = 1.5
                line.basket = basket
            }
            try context.save()
            // Read back in the save's round trip: the generated and the aggregate values.
            #expect(basket.shout == "weekly!")
            #expect(basket.lineCount == 2 && basket.totalQuantity == 5)
            #expect(basket.lines.map(\.total).sorted() == [3.0, 4.5])
            #expect(!basket.hasChanges)
            // A change of a line moves the sum; the basket's new version is known, so it saves.
            let line = try #require(basket.lines.first { $0.quantity == 3 })
            line.quantity = 10
            try context.save()
            #expect(basket.totalQuantity == 12 && line.total == 15)
            basket.label = "monthly"
            try context.save()
            #expect(basket.shout == "monthly!")
            // A deletion.
            context.delete(line)
            try context.save()
            #expect(basket.lineCount == 1 && basket.totalQuantity == 2)
            return basket.objectID
        }
        #expect(try await container.rawStrings("SELECT line_count || ' ' || total_quantity || ' ' || shout FROM basket") == ["1 2 monthly!"])
        // A batch request and another program keep it current too.
        let key = try #require(basketID.primaryKey)
        try await container.rawExecute("INSERT INTO basket_line (quantity, price, basket_id) VALUES (7, 1, \(key)), (1, 1, \(key))")
        #expect(try await container.rawIntegers("SELECT line_count FROM basket") == [3])
        #expect(try await container.rawIntegers("SELECT total_quantity FROM basket") == [10])
        let request = BatchDeleteRequest(fetchRequest: FetchRequest<BasketLine>(predicate: try FetchPredicate(format: "quantity == 7")))
        _ = try await context.execute(request)
        #expect(try await container.rawIntegers("SELECT total_quantity FROM basket") == [3])
        // Fetch by a derived attribute, and sort by one.
        try await context.perform {
            context.reset()
            let found = try context.fetch(FetchRequest<Basket>(predicate: try FetchPredicate(format: "lineCount == 2 AND shout BEGINSWITH 'month'"),
                                                               sortDescriptors: [FetchSortDescriptor(key: "totalQuantity")]))
            #expect(found.map(\.objectID) == [basketID])
        }
    }

    @Test func aNewOwnerCountsRowsWrittenBeforeItAndAJoinTableCounts() async throws {
        let container = try await container()
        let context = container.newBackgroundContext()
        try await context.perform {
            let basket = Basket(context: context)
            let stickers = (0..<3).map { index in
                let sticker = Sticker(context: context)
                sticker.name = "s\(index)"
                return sticker
            }
            basket.stickers = Set(stickers)
            try context.save()
            #expect(basket.stickerCount == 3)
            basket.stickers = [stickers[0]]
            try context.save()
            #expect(basket.stickerCount == 1)
            // From the other side of the many-to-many relationship.
            stickers[2].baskets = [basket]
            try context.save()
            #expect(basket.stickerCount == 2)
        }
        #expect(try await container.rawIntegers("SELECT sticker_count FROM basket") == [2])
        // Rows inserted before their owner (another program, foreign keys deferred).
        try await container.rawExecute("""
            BEGIN;
            INSERT INTO basket_line (id, quantity, price, basket_id) VALUES (900, 4, 1, 900), (901, 5, 1, 900);
            INSERT INTO basket (id, label) VALUES (900, 'late');
            COMMIT
            """)
        #expect(try await container.rawIntegers("SELECT line_count * 100 + total_quantity FROM basket WHERE id = 900") == [209])
    }

    @Test func derivedAttributesCannotBeSetInAnyWay() async throws {
        let container = try await container()
        let context = container.newBackgroundContext()
        try await context.perform {
            let basket = Basket(context: context)
            #expect { try basket.setValue(5, forKey: "lineCount") } throws: { "\($0)".contains("lineCount is derived (lines.@count)") }
            try context.save()
        }
        let update = BatchUpdateRequest(entityName: "Basket", propertiesToUpdate: ["lineCount": 9])
        await #expect { _ = try await context.execute(update) } throws: { "\($0)".contains("lineCount is derived") }
        let insert = try BatchInsertRequest(entityName: "Basket", objects: [["label": "x", "shout": "no"]])
        await #expect { _ = try await context.execute(insert) } throws: { "\($0)".contains("shout is derived") }
        #expect(try await container.rawStrings("SELECT shout FROM basket") == ["!"])
    }
}
