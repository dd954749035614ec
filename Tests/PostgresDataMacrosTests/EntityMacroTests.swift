import PostgresDataMacros
import SwiftSyntaxMacros
import SwiftSyntaxMacrosTestSupport
import XCTest

final class EntityMacroTests: XCTestCase {
    let macros: [String: any Macro.Type] = [
        "Entity": EntityMacro.self,
        "Attribute": PersistentPropertyMacro.self,
        "Relationship": PersistentPropertyMacro.self,
        "_PersistentProperty": PersistentPropertyMacro.self,
        "Transient": TransientMacro.self,
    ]

    func testPersistentPropertyBecomesTrackedAccessors() {
        assertMacroExpansion(
            """
            final class Item: ManagedObject {
                @_PersistentProperty var done = false
            }
            """,
            expandedSource: """
            final class Item: ManagedObject {
                var done {
                    @storageRestrictions(initializes: _$done)
                    init(initialValue) {
                        _$done = .init()
                    }
                    get {
                        _$get(Self._$i_done)
                    }
                    set {
                        _$set(Self._$i_done, newValue)
                    }
                }

                private var _$done = _$PropertyMarker()

                private static let _$i_done = _$index(entity(), "done")
            }
            """,
            macros: macros)
    }

    func testADerivedAttributeHasNoSetter() {
        assertMacroExpansion(
            """
            final class Basket: ManagedObject {
                @Attribute(derived: "lines.@count") var lineCount: Int = 0
            }
            """,
            expandedSource: """
            final class Basket: ManagedObject {
                var lineCount: Int {
                    @storageRestrictions(initializes: _$lineCount)
                    init(initialValue) {
                        _$lineCount = .init()
                    }
                    get {
                        _$get(Self._$i_lineCount)
                    }
                }

                private var _$lineCount = _$PropertyMarker()

                private static let _$i_lineCount = _$index(entity(), "lineCount")
            }
            """,
            macros: ["Attribute": PersistentPropertyMacro.self])
    }

    func testAFetchedPropertyIsDescribedApartAndReadOnly() {
        assertMacroExpansion(
            """
            @Entity final class Shelf: ManagedObject {
                var name: String
                @Fetched("shelf == $FETCH_SOURCE", sortDescriptors: [FetchSortDescriptor(key: "price")]) var books: [Book]
            }
            """,
            expandedSource: """
            final class Shelf: ManagedObject {
                @_PersistentProperty(index: 0)
                var name: String
                var books: [Book] {
                    get {
                        _$fetched("books")
                    }
                }

                nonisolated static let _$entity = _$EntityDescription(name: "Shelf", managedObjectClass: Shelf.self, properties: [
                        _$property("name", (String).self),
                    ], fetchedProperties: [_$fetchedProperty("books", ([Book]).self, "shelf == $FETCH_SOURCE", sortDescriptors: [FetchSortDescriptor(key: "price")])])

                public override class func entity() -> _$EntityDescription {
                    _$entity
                }

                public override class var _$keyPathNames: [AnyKeyPath: String] {
                    [\\Shelf.name: "name"]
                }
            }
            """,
            macros: ["Entity": EntityMacro.self, "Fetched": FetchedMacro.self])
    }

    func testACompositeStructConformsThroughItsElements() {
        assertMacroExpansion(
            """
            @Composite struct Address {
                var city: String = ""
                var postcode: String?
                static let none = Address()
            }
            """,
            expandedSource: """
            struct Address {
                var city: String = ""
                var postcode: String?
                static let none = Address()
            }

            extension Address: CompositeAttributeValue {
                public static var compositeElements: [AttributeDescription] {
                    [AttributeDescription(name: "city", valueType: (String).self), AttributeDescription(name: "postcode", valueType: (String?).self)]
                }

                public init(compositeValues values: [AttributeValue]) {
                    self.init(city: (String)(attributeValue: values[0]), postcode: (String?)(attributeValue: values[1]))
                }

                public var compositeValues: [AttributeValue] {
                    [city.attributeValue, postcode.attributeValue]
                }
            }
            """,
            macros: ["Composite": CompositeMacro.self])
    }

    func testASubclassOfAnEntityIsItsSubentity() {
        assertMacroExpansion(
            """
            @Entity final class Car: Vehicle {
                var doors: Int = 4
            }
            """,
            expandedSource: """
            final class Car: Vehicle {
                @_PersistentProperty
                var doors: Int = 4

                nonisolated static let _$entity_Car = _$EntityDescription(name: "Car", managedObjectClass: Car.self, properties: [
                        _$property("doors", (Int).self, default: 4),
                    ], parent: Vehicle.entity())

                public override class func entity() -> _$EntityDescription {
                    _$entity_Car
                }

                public override class var _$keyPathNames: [AnyKeyPath: String] {
                    super._$keyPathNames.merging([\\Car.doors: "doors"]) {
                        $1
                    }
                }
            }
            """,
            macros: ["Entity": EntityMacro.self])
    }

    func testEntityDescribesEveryPersistentPropertyInOrder() {
        assertMacroExpansion(
            """
            @Entity final class Item: ManagedObject {
                @Attribute(.unique, maxLength: 10) var name: String
                var done = false
                @Relationship(deleteRule: .cascade, inverse: \\TodoList.items) var list: TodoList?
                @Transient var scratch = 0
                var computed: Int { 1 }
            }
            """,
            expandedSource: """
            final class Item: ManagedObject {
                var name: String {
                    @storageRestrictions(initializes: _$name)
                    init(initialValue) {
                        _$name = .init()
                    }
                    get {
                        _$get(Self._$i_name)
                    }
                    set {
                        _$set(Self._$i_name, newValue)
                    }
                }

                private var _$name = _$PropertyMarker()

                private static let _$i_name = _$index(entity(), "name")
                var done {
                    @storageRestrictions(initializes: _$done)
                    init(initialValue) {
                        _$done = .init()
                    }
                    get {
                        assert(Self._$isIndex(1, of: "done"))
                        return _$get(Self._$i_done)
                    }
                    set {
                        assert(Self._$isIndex(1, of: "done"))
                        _$set(Self._$i_done, newValue)
                    }
                }

                private var _$done = _$PropertyMarker()

                private static let _$i_done = 1
                var list: TodoList? {
                    @storageRestrictions(initializes: _$list)
                    init(initialValue) {
                        _$list = .init()
                    }
                    get {
                        _$get(Self._$i_list)
                    }
                    set {
                        _$set(Self._$i_list, newValue)
                    }
                }

                private var _$list = _$PropertyMarker()

                private static let _$i_list = _$index(entity(), "list")
                var scratch = 0
                var computed: Int { 1 }

                nonisolated static let _$entity = _$EntityDescription(name: "Item", managedObjectClass: Item.self, properties: [
                        _$property("name", (String).self, .unique, maxLength: 10),
                        _$property("done", default: false),
                        _$property("list", (TodoList?).self, deleteRule: .cascade, inverse: "items"),
                    ])

                public override class func entity() -> _$EntityDescription {
                    _$entity
                }

                public override class var _$keyPathNames: [AnyKeyPath: String] {
                    [\\Item.name: "name", \\Item.done: "done", \\Item.list: "list"]
                }
            }
            """,
            macros: macros)
    }

    func testValidateKeyMethodsAreDispatchedByKey() {
        // Only @Entity expands here: the property's accessors are another test's subject.
        assertMacroExpansion(
            """
            @Entity final class Account: ManagedObject {
                var code: String
                func validateCode(_ value: inout String) throws {}
                func validateEverything() throws {}
                func validateMissing(_ value: inout Int) throws {}
            }
            """,
            expandedSource: """
            final class Account: ManagedObject {
                @_PersistentProperty(index: 0)
                var code: String
                func validateCode(_ value: inout String) throws {}
                func validateEverything() throws {}
                func validateMissing(_ value: inout Int) throws {}

                nonisolated static let _$entity = _$EntityDescription(name: "Account", managedObjectClass: Account.self, properties: [
                        _$property("code", (String).self),
                    ])

                public override class func entity() -> _$EntityDescription {
                    _$entity
                }

                public override class var _$keyPathNames: [AnyKeyPath: String] {
                    [\\Account.code: "code"]
                }

                public override class var _$validatedKeys: [String] {
                    ["code"]
                }

                public override func _$validate(_ key: String, _ value: inout _$AttributeValue) throws {
                    switch key {
                    case "code":
                        try _$validate(&value, as: (String).self) {
                            try self.validateCode(&$0)
                        }
                    default:
                        try super._$validate(key, &value)
                    }
                }
            }
            """,
            macros: ["Entity": EntityMacro.self])
    }

    /// Accessors read at constant indices while every property so far takes one index; from
    /// the first whose type could be a composite (an index per element) they look theirs up.
    func testPropertiesHaveConstantIndicesUntilOneMayBeAComposite() {
        assertMacroExpansion(
            """
            @Entity final class Order: ManagedObject {
                var number: Int32 = 0
                @Relationship(inverse: \\Customer.orders) var customer: Customer?
                var note: Optional<String>
                var placed = 1.5
                var address: Address
                var total: Decimal
            }
            """,
            expandedSource: """
            final class Order: ManagedObject {
                @_PersistentProperty(index: 0)
                var number: Int32 = 0
                @Relationship(inverse: \\Customer.orders) var customer: Customer?
                @_PersistentProperty(index: 2)
                var note: Optional<String>
                @_PersistentProperty(index: 3)
                var placed = 1.5
                @_PersistentProperty
                var address: Address
                @_PersistentProperty
                var total: Decimal

                nonisolated static let _$entity = _$EntityDescription(name: "Order", managedObjectClass: Order.self, properties: [
                        _$property("number", (Int32).self, default: 0),
                        _$property("customer", (Customer?).self, inverse: "orders"),
                        _$property("note", (Optional<String>).self),
                        _$property("placed", default: 1.5),
                        _$property("address", (Address).self),
                        _$property("total", (Decimal).self),
                    ])

                public override class func entity() -> _$EntityDescription {
                    _$entity
                }

                public override class var _$keyPathNames: [AnyKeyPath: String] {
                    [\\Order.number: "number", \\Order.customer: "customer", \\Order.note: "note", \\Order.placed: "placed", \\Order.address: "address", \\Order.total: "total"]
                }
            }
            """,
            macros: ["Entity": EntityMacro.self])
    }

    func testEntityOnAStructIsAnError() {
        assertMacroExpansion(
            """
            @Entity struct Item {
                var name: String
            }
            """,
            expandedSource: """
            struct Item {
                var name: String
            }
            """,
            diagnostics: [DiagnosticSpec(message: "@Entity applies to a final class inheriting from ManagedObject", line: 1, column: 1)],
            macros: macros)
    }
}
