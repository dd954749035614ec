import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@Composite`: a struct's conformance to `CompositeAttributeValue`, built from its typed
/// stored properties, in declaration order, through its memberwise initializer.
public struct CompositeMacro: ExtensionMacro {
    public static func expansion(
        of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax, providingExtensionsOf type: some TypeSyntaxProtocol,
        conformingTo protocols: [TypeSyntax], in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        guard let structDecl = declaration.as(StructDeclSyntax.self) else {
            context.diagnose(Diagnostic(node: node, message: CompositeDiagnostic.notAStruct))
            return []
        }
        var elements: [(name: String, type: String)] = []
        for member in structDecl.memberBlock.members {
            guard let property = StoredProperty(member.decl) else { continue }
            guard let type = property.type else {
                context.diagnose(Diagnostic(node: member.decl, message: CompositeDiagnostic.needsType(property.name)))
                continue
            }
            elements.append((property.name, type.trimmedDescription))
        }
        let descriptions = elements.map { "AttributeDescription(name: \"\($0.name)\", valueType: (\($0.type)).self)" }
        let arguments = elements.enumerated().map { "\($0.element.name): (\($0.element.type))(attributeValue: values[\($0.offset)])" }
        let values = elements.map { "\($0.name).attributeValue" }
        let decl: DeclSyntax = """
            extension \(type.trimmed): CompositeAttributeValue {
                public static var compositeElements: [AttributeDescription] {
                    [\(raw: descriptions.joined(separator: ", "))]
                }

                public init(compositeValues values: [AttributeValue]) {
                    self.init(\(raw: arguments.joined(separator: ", ")))
                }

                public var compositeValues: [AttributeValue] {
                    [\(raw: values.joined(separator: ", "))]
                }
            }
            """
        guard let ext = decl.as(ExtensionDeclSyntax.self) else { return [] }
        return [ext]
    }
}

enum CompositeDiagnostic: DiagnosticMessage {
    case notAStruct
    case needsType(String)

    var message: String {
        switch self {
        case .notAStruct: "@Composite applies to a struct whose stored properties are attributes"
        case .needsType(let name): "element '\(name)' of a composite attribute needs a type annotation"
        }
    }

    var diagnosticID: MessageID { MessageID(domain: "PostgresDataMacros", id: "composite.\(self)") }
    var severity: DiagnosticSeverity { .error }
}
