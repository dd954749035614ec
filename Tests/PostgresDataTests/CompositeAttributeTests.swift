import Foundation
import PostgresClient
@testable import PostgresData
import PostgresDataTesting
import Testing

@Composite struct PostalAddress: Equatable {
    var street: String = ""
    var city: String = ""
    var postcode: String?
}

@Entity final class Customer: ManagedObject {
    var name: String = ""
    var address = PostalAddress()
    var billing: PostalAddress = PostalAddress(street: "", city: "Nowhere", postcode: nil)
}

let customerModel = ManagedObjectModel(Customer.self)

/// Composite attributes (Core Data's `NSCompositeAttributeDescription`): a struct stored as
/// prefixed columns, reachable element by element in predicates and sorts.
@Suite struct CompositeAttributeTests {
    @Test func aCompositeIsOneColumnPerElement() throws {
        #expect(customerModel.problems.isEmpty)
        let customer = try #require(customerModel.entitiesByName["Customer"])
        #expect(customer.properties.map(\.name) == ["name", "address.street", "address.city", "address.postcode",
                                                    "billing.street", "billing.city", "billing.postcode"])
        let sql = customerModel.createSchemaSQL()
        #expect(sql.contains(#""address_city" text NOT NULL DEFAULT ''"#))
        #expect(sql.contains(#""billing_city" text NOT NULL DEFAULT 'Nowhere'"#))
        #expect(sql.contains(#""address_postcode" text,"#))
        // A predicate and a sort reach an element.
        var request = FetchRequest<Customer>(predicate: try FetchPredicate(format: "address.city == %@", "Paris"),
                                             sortDescriptors: [FetchSortDescriptor(key: "address.postcode")])
        request.fetchLimit = 0
        let (select, _) = try request.sql(for: customer, columns: "t.\"id\"")
        #expect(select == #"SELECT t."id" FROM "customer" AS t WHERE (t."address_city" = $1::text) ORDER BY t."address_postcode" ASC NULLS FIRST, t."id""#)
    }

    @Test func aCompositeSavesFetchesAndChangesElementByElement() async throws {
        let configuration = try await TestDatabase.fresh(prefix: "pd_composite")
        let container = PersistentContainer(name: "Customers", model: customerModel)
        try await container.loadPersistentStores(configuration: configuration, options: .init(createSchemaIfMissing: true))
        let context = container.newBackgroundContext()
        try await context.perform {
            for (name, city, postcode) in [("Ada", "London", "N1"), ("Blaise", "Paris", "75005"), ("Carl", "Paris", nil)] {
                let customer = Customer(context: context)
                customer.name = name
                customer.address = PostalAddress(street: "\(name) street", city: city, postcode: postcode)
            }
            try context.save()
        }
        #expect(try await container.rawStrings("SELECT name || ':' || address_city || ':' || billing_city FROM customer ORDER BY name")
            == ["Ada:London:Nowhere", "Blaise:Paris:Nowhere", "Carl:Paris:Nowhere"])
        let reader = container.newBackgroundContext()
        try await reader.perform {
            let parisians = try reader.fetch(FetchRequest<Customer>(predicate: try FetchPredicate(format: "address.city == 'Paris'"),
                                                                    sortDescriptors: [FetchSortDescriptor(key: "address.postcode", ascending: false)]))
            #expect(parisians.map(\.name) == ["Blaise", "Carl"])
            #expect(parisians[0].address == PostalAddress(street: "Blaise street", city: "Paris", postcode: "75005"))
            // In memory, the same predicate agrees.
            let predicate = try FetchPredicate(format: "address.city == 'Paris' AND address.postcode != nil")
            #expect(try parisians.filter { try predicate.evaluate(with: $0) }.map(\.name) == ["Blaise"])
            // Core Data's dictionary of the elements.
            let elements = parisians[0].value(forKey: "address") as? [String: Any]
            #expect(elements?["city"] as? String == "Paris" && elements?.count == 3)
            // Changing one element writes one column.
            var address = parisians[1].address
            address.postcode = "75001"
            parisians[1].address = address
            #expect(Set(parisians[1].changedValues().keys) == ["address.postcode"])
            try reader.save()
        }
        #expect(try await container.rawStrings("SELECT coalesce(address_postcode, '-') FROM customer ORDER BY name") == ["N1", "75005", "75001"])
        // A batch update by element.
        let update = BatchUpdateRequest(entityName: "Customer", predicate: try FetchPredicate(format: "address.city == 'London'"),
                                        propertiesToUpdate: ["billing.city": "London"])
        #expect(try await reader.execute(update).count == 1)
        #expect(try await container.rawStrings("SELECT billing_city FROM customer ORDER BY name") == ["London", "Nowhere", "Nowhere"])
    }
}
