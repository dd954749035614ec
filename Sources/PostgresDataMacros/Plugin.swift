import SwiftCompilerPlugin
import SwiftSyntaxMacros

@main
struct PostgresDataMacrosPlugin: CompilerPlugin {
    let providingMacros: [any Macro.Type] = [
        EntityMacro.self,
        PersistentPropertyMacro.self,
        TransientMacro.self, FetchedMacro.self, CompositeMacro.self,
    ]
}
