import SwiftSyntax

/// A stored `var` of an `@Entity` class, as the macros read it.
struct StoredProperty {
    var name: String
    var type: TypeSyntax?
    var initializer: ExprSyntax?
    var attributes: AttributeListSyntax

    /// The stored `var`s of a declaration (not static, no accessors), or nil.
    init?(_ declaration: some DeclSyntaxProtocol) {
        guard let variable = declaration.as(VariableDeclSyntax.self),
              variable.bindingSpecifier.tokenKind == .keyword(.var),
              !variable.modifiers.contains(where: { $0.name.tokenKind == .keyword(.static) || $0.name.tokenKind == .keyword(.class) || $0.name.tokenKind == .keyword(.lazy) }),
              variable.bindings.count == 1, let binding = variable.bindings.first,
              let identifier = binding.pattern.as(IdentifierPatternSyntax.self) else { return nil }
        if let accessor = binding.accessorBlock {
            // Only `willSet`/`didSet` observers keep a property stored.
            guard case .accessors(let list) = accessor.accessors,
                  list.allSatisfy({ $0.accessorSpecifier.tokenKind == .keyword(.willSet) || $0.accessorSpecifier.tokenKind == .keyword(.didSet) })
            else { return nil }
        }
        name = identifier.identifier.text
        type = binding.typeAnnotation?.type
        initializer = binding.initializer?.value
        attributes = variable.attributes
    }

    func attribute(named names: Set<String>) -> AttributeSyntax? {
        for element in attributes {
            guard case .attribute(let attribute) = element else { continue }
            let name = attribute.attributeName.trimmedDescription
            if names.contains(name) || names.contains(where: { name.hasSuffix(".\($0)") }) { return attribute }
        }
        return nil
    }

    var isTransient: Bool { attribute(named: ["Transient"]) != nil }
    /// `@Fetched`: a fetched property, described apart from the persistent ones.
    var fetchedAttribute: AttributeSyntax? { attribute(named: ["Fetched"]) }
    var optionsAttribute: AttributeSyntax? { attribute(named: ["Attribute", "Relationship"]) }
    var isPersistent: Bool { !isTransient && fetchedAttribute == nil }
}
