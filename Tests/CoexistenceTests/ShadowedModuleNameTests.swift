import Foundation
import PostgresData
import Testing

/// What PostgresNIO declares, and every Vapor or Fluent app imports: a type with the module's
/// name, which shadows the module `PostgresData` in qualified names of this module.
struct PostgresData {
    var value: String
}

@Entity final class Invoice: ManagedObject {
    @Attribute(.unique) var number: String
    var amount: Decimal = 0
    var customer: Customer?
}

@Entity final class Customer: ManagedObject {
    var name: String
    @Relationship(deleteRule: .cascade, inverse: \Invoice.customer) var invoices: Set<Invoice>
}

@Suite struct ShadowedModuleNameTests {
    @Test func entitiesCompileAndDescribeThemselvesBesideATypeNamedPostgresData() {
        let model = ManagedObjectModel(Invoice.self, Customer.self)
        #expect(model.entitiesByName["Invoice"]?.tableName == "invoice")
        #expect(Invoice.entity().properties.map(\.name) == ["number", "amount", "customer"])
        #expect(PostgresData(value: "nio").value == "nio")
    }
}
