import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@Entity`: adds `@_PersistentProperty` to stored properties without options, and the
/// class's entity description built from every persistent property in declaration order.
public struct EntityMacro: MemberMacro, MemberAttributeMacro {
    public static func expansion(
        of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax,
        providingAttributesFor member: some DeclSyntaxProtocol, in context: some MacroExpansionContext
    ) throws -> [AttributeSyntax] {
        guard let classDecl = declaration.as(ClassDeclSyntax.self), let property = StoredProperty(member), property.isPersistent,
              property.optionsAttribute == nil else { return [] }
        guard let index = literalIndex(of: property.name, in: classDecl) else { return ["@_PersistentProperty"] }
        return ["@_PersistentProperty(index: \(raw: index))"]
    }

    /// The index of the property called `name` in the entity's properties, when the macro can
    /// tell it: the class is not a sub-entity (the parent's properties come first), and
    /// neither that property nor any before it can be a composite attribute (one index per
    /// element). Its accessors then read the object's values at a constant, not through a
    /// lazily initialized global (a call per read). Nil otherwise.
    static func literalIndex(of name: String, in classDecl: ClassDeclSyntax) -> Int? {
        guard !isSubentity(classDecl) else { return nil }
        var index = 0
        for member in classDecl.memberBlock.members {
            // The same properties, in the same order, as the entity's description.
            guard let property = StoredProperty(member.decl), property.isPersistent,
                  property.type != nil || property.initializer != nil else { continue }
            guard takesOneIndex(property) else { return nil }
            if property.name == name { return index }
            index += 1
        }
        return nil
    }

    /// Whether a property certainly takes one index: a relationship, or an attribute of a
    /// standard type (declared, or inferred from a literal).
    private static func takesOneIndex(_ property: StoredProperty) -> Bool {
        if property.attribute(named: ["Relationship"]) != nil { return true }
        if let type = property.type { return standardAttributeTypes.contains(unwrappingOptional(type)) }
        guard let initializer = property.initializer else { return false }
        return initializer.is(BooleanLiteralExprSyntax.self) || initializer.is(IntegerLiteralExprSyntax.self)
            || initializer.is(FloatLiteralExprSyntax.self) || initializer.is(StringLiteralExprSyntax.self)
    }

    private static let standardAttributeTypes: Set<String> = [
        "String", "Int", "Int16", "Int32", "Int64", "Double", "Float", "Bool", "Date", "Data", "UUID", "URL", "Decimal",
    ]

    /// `T?`, `T!` and `Optional<T>` → `T`; any other type as written.
    private static func unwrappingOptional(_ type: TypeSyntax) -> String {
        if let optional = type.as(OptionalTypeSyntax.self) { return optional.wrappedType.trimmedDescription }
        if let unwrapped = type.as(ImplicitlyUnwrappedOptionalTypeSyntax.self) { return unwrapped.wrappedType.trimmedDescription }
        if let identifier = type.as(IdentifierTypeSyntax.self), identifier.name.text == "Optional",
           let argument = identifier.genericArgumentClause?.arguments.first {
            return argument.argument.trimmedDescription
        }
        return type.trimmedDescription
    }

    /// A class inheriting from another `@Entity` class is its sub-entity.
    static func isSubentity(_ classDecl: ClassDeclSyntax) -> Bool {
        guard let parent = classDecl.inheritanceClause?.inheritedTypes.first?.type.trimmedDescription else { return false }
        return parent != "ManagedObject" && parent != "PostgresData.ManagedObject"
    }

    public static func expansion(
        of node: AttributeSyntax, providingMembersOf declaration: some DeclGroupSyntax,
        conformingTo protocols: [TypeSyntax], in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard let classDecl = declaration.as(ClassDeclSyntax.self) else {
            context.diagnose(Diagnostic(node: node, message: EntityDiagnostic.notAClass))
            return []
        }
        let className = classDecl.name.text
        var descriptions: [String] = []
        var keyPaths: [String] = []
        var persistentNames: [String] = []
        var fetched: [String] = []
        for member in classDecl.memberBlock.members {
            if let property = StoredProperty(member.decl), let attribute = property.fetchedAttribute {
                var arguments = ["\"\(property.name)\"", "(\(property.type?.trimmedDescription ?? "[ManagedObject]")).self"]
                for argument in attribute.arguments?.as(LabeledExprListSyntax.self) ?? [] {
                    arguments.append((argument.label.map { "\($0.text): " } ?? "") + argument.expression.trimmedDescription)
                }
                fetched.append("_$fetchedProperty(\(arguments.joined(separator: ", ")))")
                continue
            }
            guard let property = StoredProperty(member.decl), property.isPersistent else { continue }
            guard property.type != nil || property.initializer != nil else {
                context.diagnose(Diagnostic(node: member.decl, message: EntityDiagnostic.needsType(property.name)))
                continue
            }
            descriptions.append(description(of: property))
            persistentNames.append(property.name)
            keyPaths.append("\\\(className).\(property.name): \"\(property.name)\"")
        }
        var entityArguments = "name: \"\(className)\", managedObjectClass: \(className).self, properties: [\n"
        entityArguments += descriptions.map { "        \($0)," }.joined(separator: "\n")
        entityArguments += "\n    ]"
        if let arguments = node.arguments?.as(LabeledExprListSyntax.self) {
            // In the initializer's order, whatever order the attribute gives them in.
            var byLabel: [String: String] = [:]
            for argument in arguments {
                guard let label = argument.label?.text else { continue }
                byLabel[label] = argument.expression.trimmedDescription
            }
            for label in ["uniquenessConstraints", "indexes", "tableName"] {
                if let expression = byLabel[label] { entityArguments += ", \(label): \(expression)" }
            }
        }
        if !fetched.isEmpty { entityArguments += ", fetchedProperties: [\(fetched.joined(separator: ", "))]" }
        // A class inheriting from another @Entity class is its sub-entity: the parent's
        // description comes first, and the members that cannot be overridden get own names.
        let parent = classDecl.inheritanceClause?.inheritedTypes.first?.type.trimmedDescription
        let isSubentity = Self.isSubentity(classDecl)
        if isSubentity, let parent { entityArguments += ", parent: \(parent).entity()" }
        if let abstract = node.arguments?.as(LabeledExprListSyntax.self)?.first(where: { $0.label?.text == "isAbstract" }) {
            entityArguments += ", isAbstract: \(abstract.expression.trimmedDescription)"
        }
        let storage = isSubentity ? "_$entity_\(className)" : "_$entity"
        let keyPathList = "[\(keyPaths.isEmpty ? ":" : keyPaths.joined(separator: ", "))]"
        var members: [DeclSyntax] = [
            "nonisolated static let \(raw: storage) = _$EntityDescription(\(raw: entityArguments))",
            "public override class func entity() -> _$EntityDescription { \(raw: storage) }",
            isSubentity
                ? "public override class var _$keyPathNames: [AnyKeyPath: String] { super._$keyPathNames.merging(\(raw: keyPathList)) { $1 } }"
                : "public override class var _$keyPathNames: [AnyKeyPath: String] { \(raw: keyPathList) }",
        ]
        let rules = validationRules(in: classDecl, properties: Set(persistentNames))
        if !rules.isEmpty {
            let keys = rules.map { "\"\($0.key)\"" }.joined(separator: ", ")
            let cases = rules.map { rule in
                "case \"\(rule.key)\": try _$validate(&value, as: (\(rule.type)).self) { try self.\(rule.method)(&$0) }"
            }.joined(separator: "\n")
            members.append(isSubentity ? "public override class var _$validatedKeys: [String] { super._$validatedKeys + [\(raw: keys)] }"
                                       : "public override class var _$validatedKeys: [String] { [\(raw: keys)] }")
            members.append("""
                public override func _$validate(_ key: String, _ value: inout _$AttributeValue) throws {
                    switch key {
                    \(raw: cases)
                    default: try super._$validate(key, &value)
                    }
                }
                """)
        }
        return members
    }

    /// The class's `validate<Key>(_ value: inout T) throws` methods whose key is one of its
    /// persistent properties (Core Data's `validate<Key>:error:`), in declaration order.
    private static func validationRules(in classDecl: ClassDeclSyntax,
                                        properties: Set<String>) -> [(key: String, type: String, method: String)] {
        var rules: [(key: String, type: String, method: String)] = []
        for member in classDecl.memberBlock.members {
            guard let function = member.decl.as(FunctionDeclSyntax.self) else { continue }
            let name = function.name.text
            guard name.hasPrefix("validate"), name.count > "validate".count,
                  function.signature.effectSpecifiers?.throwsClause != nil,
                  function.signature.parameterClause.parameters.count == 1,
                  let parameter = function.signature.parameterClause.parameters.first,
                  let attributed = parameter.type.as(AttributedTypeSyntax.self),
                  attributed.specifiers.contains(where: { $0.trimmedDescription == "inout" }) else { continue }
            let suffix = name.dropFirst("validate".count)
            let key = suffix.prefix(1).lowercased() + suffix.dropFirst()
            guard properties.contains(key) else { continue }
            rules.append((key, attributed.baseType.trimmedDescription, name))
        }
        return rules
    }

    /// `_$property("name", Type.self, default: value, options…)`.
    private static func description(of property: StoredProperty) -> String {
        var arguments = ["\"\(property.name)\""]
        if let type = property.type { arguments.append("(\(type.trimmedDescription)).self") }
        if let initializer = property.initializer { arguments.append("default: \(initializer.trimmedDescription)") }
        if let options = property.optionsAttribute?.arguments?.as(LabeledExprListSyntax.self) {
            for argument in options {
                if argument.label?.text == "inverse" {
                    arguments.append("inverse: \"\(lastComponent(of: argument.expression))\"")
                } else if let label = argument.label {
                    arguments.append("\(label.text): \(argument.expression.trimmedDescription)")
                } else {
                    arguments.append(argument.expression.trimmedDescription)
                }
            }
        }
        return "_$property(\(arguments.joined(separator: ", ")))"
    }

    /// `\TodoList.items` → `items`.
    private static func lastComponent(of expression: ExprSyntax) -> String {
        if let keyPath = expression.as(KeyPathExprSyntax.self), let last = keyPath.components.last,
           case .property(let component) = last.component {
            return component.declName.baseName.text
        }
        return expression.trimmedDescription.split(separator: ".").last.map(String.init) ?? ""
    }
}

/// `@Attribute`, `@Relationship`, `@_PersistentProperty`: typed accessors over the object's
/// tracked values, and the peers they need.
public struct PersistentPropertyMacro: AccessorMacro, PeerMacro {
    public static func expansion(
        of node: AttributeSyntax, providingAccessorsOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [AccessorDeclSyntax] {
        guard let property = StoredProperty(declaration), property.isPersistent else { return [] }
        let marker = "_$\(property.name)"
        let index = "Self._$i_\(property.name)"
        // A derived attribute is read-only: the database computes it.
        let isDerived = node.arguments?.as(LabeledExprListSyntax.self)?.contains { $0.label?.text == "derived" } ?? false
        // A constant index is checked against the entity's description in debug builds.
        let check = literalIndex(in: node).map { "assert(Self._$isIndex(\($0), of: \"\(property.name)\"))\n" } ?? ""
        return [
            """
            @storageRestrictions(initializes: \(raw: marker))
            init(initialValue) {
                \(raw: marker) = .init()
            }
            """,
            "get { \(raw: check.isEmpty ? "" : check + "return ")_$get(\(raw: index)) }",
        ] + (isDerived ? [] : ["set { \(raw: check)_$set(\(raw: index), newValue) }"])
    }

    /// The `index:` that `@Entity` gives `@_PersistentProperty` when it can tell it.
    private static func literalIndex(in node: AttributeSyntax) -> Int? {
        guard let argument = node.arguments?.as(LabeledExprListSyntax.self)?.first(where: { $0.label?.text == "index" }) else {
            return nil
        }
        return argument.expression.as(IntegerLiteralExprSyntax.self).flatMap { Int($0.literal.text) }
    }

    public static func expansion(
        of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard let property = StoredProperty(declaration), property.isPersistent else { return [] }
        let index: ExprSyntax = literalIndex(in: node).map { "\(literal: $0)" } ?? "_$index(entity(), \(literal: property.name))"
        return [
            "private var _$\(raw: property.name) = _$PropertyMarker()",
            "private static let _$i_\(raw: property.name) = \(index)",
        ]
    }
}

/// `@Fetched`: a read-only accessor loading the fetched property; `@Entity` describes it.
public struct FetchedMacro: AccessorMacro {
    public static func expansion(
        of node: AttributeSyntax, providingAccessorsOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [AccessorDeclSyntax] {
        guard let property = StoredProperty(declaration) else { return [] }
        return ["get { _$fetched(\(literal: property.name)) }"]
    }
}

/// `@Transient`: nothing to generate; `@Entity` skips the property.
public struct TransientMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] { [] }
}

enum EntityDiagnostic: DiagnosticMessage {
    case notAClass
    case needsType(String)

    var message: String {
        switch self {
        case .notAClass: "@Entity applies to a final class inheriting from ManagedObject"
        case .needsType(let name): "persistent property '\(name)' needs a type annotation or an initial value"
        }
    }

    var diagnosticID: MessageID { MessageID(domain: "PostgresDataMacros", id: "\(self)") }
    var severity: DiagnosticSeverity { .error }
}
