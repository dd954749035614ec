import Foundation
import PostgresClient
@testable import PostgresData
import PostgresDataTesting
import Testing

@Entity final class Ticket: ManagedObject {
    @Attribute(.preservesValueInHistoryOnDeletion) var reference: String = ""
    @Attribute(.preservesValueInHistoryOnDeletion) var opened: Date = Date(timeIntervalSince1970: 0)
    @Attribute(.preservesValueInHistoryOnDeletion) var price: Decimal?
    var note: String = ""
    @Relationship(deleteRule: .cascade, inverse: \TicketLine.ticket) var lines: Set<TicketLine>
}

@Entity final class TicketLine: ManagedObject {
    @Attribute(.preservesValueInHistoryOnDeletion) var sku: String = ""
    var ticket: Ticket?
}

let ticketModel = ManagedObjectModel(Ticket.self, TicketLine.self)

/// History tombstones (Core Data's `preservesValueInHistoryOnDeletion`): a deletion's
/// history keeps the values a later reader needs to know what went.
@Suite struct HistoryTombstoneTests {
    @Test func tombstonesRoundTripThroughJSONByType() throws {
        let ticket = try #require(ticketModel.entitiesByName["Ticket"])
        var values = [AttributeValue](repeating: .null, count: ticket.properties.count)
        values[ticket.propertyIndex(named: "reference")!] = .string("T-1 \"quoted\"")
        values[ticket.propertyIndex(named: "opened")!] = .date(Date(timeIntervalSince1970: 1_700_000_000.5))
        values[ticket.propertyIndex(named: "price")!] = .decimal(Decimal(string: "12.30")!)
        values[ticket.propertyIndex(named: "note")!] = .string("not kept")
        let rows: [(key: Int64, values: PropertyValues)] = [(key: 7, values: PropertyValues(values))]
        let json = try #require(HistoryTombstones.encode(rows, entity: ticket))
        #expect(!json.contains("not kept"))
        let decoded = HistoryTombstones.decode(json, entity: ticket)
        #expect(decoded[7] == [
            "reference": .string("T-1 \"quoted\""), "opened": .date(Date(timeIntervalSince1970: 1_700_000_000.5)),
            "price": .decimal(Decimal(string: "12.30")!),
        ])
        #expect(HistoryTombstones.preserved(in: ticket).map { ticket.properties[$0].name } == ["reference", "opened", "price"])
    }

    @Test func savesAndBatchDeletesKeepTheValuesOfWhatTheyDelete() async throws {
        let configuration = try await TestDatabase.fresh(prefix: "pd_tombstone")
        let container = PersistentContainer(name: "Tickets", model: ticketModel)
        try await container.loadPersistentStores(configuration: configuration,
                                                 options: .init(createSchemaIfMissing: true, persistentHistoryTracking: true))
        let context = container.newBackgroundContext()
        let (first, second, lines) = try await context.perform {
            func ticket(_ reference: String, skus: [String]) -> Ticket {
                let ticket = Ticket(context: context)
                ticket.reference = reference
                ticket.opened = Date(timeIntervalSince1970: 1_000)
                ticket.note = "secret"
                for sku in skus {
                    let line = TicketLine(context: context)
                    line.sku = sku
                    line.ticket = ticket
                }
                return ticket
            }
            let first = ticket("T-1", skus: [])
            let second = ticket("T-2", skus: ["A", "B"])
            try context.save()
            let lines = second.lines.map(\.objectID)
            context.delete(first)
            try context.save()
            return (first.objectID, second.objectID, lines)
        }
        var request = BatchDeleteRequest(fetchRequest: FetchRequest<Ticket>(predicate: try FetchPredicate(format: "reference == 'T-2'")))
        request.resultType = .objectIDs
        _ = try await context.execute(request)
        let history = try await context.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil))
        let deletions = history.transactions.flatMap(\.changes).filter { $0.changeType == .delete }
        func tombstone(_ id: ManagedObjectID) -> [String: AttributeValue]? { deletions.first { $0.changedObjectID == id }?.tombstone }
        #expect(tombstone(first) == ["reference": .string("T-1"), "opened": .date(Date(timeIntervalSince1970: 1_000)), "price": .null])
        #expect(tombstone(second)?["reference"] == .string("T-2"))
        // Rows a cascade deleted keep theirs too; attributes not marked keep nothing.
        #expect(Set(lines.compactMap { tombstone($0)?["sku"] }) == [.string("A"), .string("B")])
        #expect(deletions.allSatisfy { $0.tombstone?["note"] == nil })
        // Inserts and updates have none.
        #expect(history.transactions.flatMap(\.changes).filter { $0.changeType != .delete }.allSatisfy { $0.tombstone == nil })
    }

    @Test func historyTablesMadeBeforeTombstonesGainTheColumnWhenAStoreLoads() async throws {
        let configuration = try await TestDatabase.fresh(prefix: "pd_tombstone")
        let setup = try await Connection.connect(configuration)
        try await setup.execute(script: """
            CREATE TABLE postgres_data_history_transaction (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                xid xid8 NOT NULL DEFAULT pg_current_xact_id(), author text, context_name text, origin uuid NOT NULL,
                "timestamp" timestamptz NOT NULL DEFAULT clock_timestamp());
            CREATE TABLE postgres_data_history_change (transaction_id bigint NOT NULL REFERENCES postgres_data_history_transaction (id),
                entity text NOT NULL, change_type smallint NOT NULL, object_keys int8multirange NOT NULL, updated_properties text[]);
            """)
        await setup.close()
        let container = PersistentContainer(name: "Tickets", model: ticketModel)
        try await container.loadPersistentStores(configuration: configuration,
                                                 options: .init(createSchemaIfMissing: true, persistentHistoryTracking: true))
        #expect(try await container.rawStrings("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'postgres_data_history_change'::regclass AND attname = 'tombstones'") == ["jsonb"])
    }
}
