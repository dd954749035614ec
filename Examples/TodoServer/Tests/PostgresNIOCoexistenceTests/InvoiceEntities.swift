import Foundation
import PostgresData
import PostgresNIO
import Testing

// Entities declared in a file that imports PostgresNIO, whose struct `PostgresData` shadows the
// module's name, as in every Vapor or Fluent app: the macros' expansions must name nothing
// through the module name.

@Entity final class Invoice: ManagedObject {
    @Attribute(.unique) var number: String
    @Attribute(minValue: 0) var total: Int = 0
    var issuedAt: Date?
    @Relationship(deleteRule: .cascade, inverse: \InvoiceLine.invoice) var lines: Set<InvoiceLine>
}

@Entity final class InvoiceLine: ManagedObject {
    var text: String
    var amount = 0
    var invoice: Invoice?
}

@Suite struct PostgresNIOCoexistenceTests {
    @Test func entitiesDeclaredBesidePostgresNIOSaveAndFetch() async throws {
        // PostgresNIO's own types stay usable in the same file.
        let nioValue = PostgresNIO.PostgresData(string: "nio")
        #expect(nioValue.string == "nio")

        let container = try await loadedContainer(ManagedObjectModel(Invoice.self, InvoiceLine.self))
        let context = container.newBackgroundContext()
        let lines = try await context.perform {
            let invoice = Invoice(context: context)
            invoice.number = "2026-001"
            invoice.total = 30
            for amount in [10, 20] {
                let line = InvoiceLine(context: context)
                line.text = "line \(amount)"
                line.amount = amount
                line.invoice = invoice
            }
            try await context.save()
            let fetched = try await context.fetch(FetchRequest<Invoice>(predicate: try FetchPredicate(format: "number == %@", "2026-001")))
            return fetched.first?.lines.map(\.amount).sorted() ?? []
        }
        #expect(lines == [10, 20])
        await container.persistentStoreCoordinator.close()
    }
}
