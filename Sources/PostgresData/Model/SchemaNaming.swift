/// Names of tables and columns derived from the model: snake_case of the Swift names.
enum SchemaNaming {
    /// `TodoList` → `todo_list`, `createdAt` → `created_at`, `URLString` → `url_string`.
    static func snakeCase(_ name: String) -> String {
        var result = ""
        let characters = Array(name)
        for (index, character) in characters.enumerated() {
            if character.isUppercase {
                let previous = index > 0 ? characters[index - 1] : nil
                let next = index + 1 < characters.count ? characters[index + 1] : nil
                let startsWord = previous.map { $0.isLowercase || $0.isNumber } ?? false
                let endsAcronym = (previous?.isUppercase ?? false) && (next?.isLowercase ?? false)
                if index > 0 && (startsWord || endsAcronym) && !result.hasSuffix("_") { result.append("_") }
                result.append(contentsOf: character.lowercased())
            } else {
                result.append(character)
            }
        }
        return result
    }

    /// PostgreSQL truncates identifiers to 63 bytes; generated names are cut the same way so
    /// that the names the server reports match the model's.
    static func identifier(_ parts: String...) -> String {
        let joined = parts.joined(separator: "_")
        guard joined.utf8.count > 63 else { return joined }
        return String(decoding: joined.utf8.prefix(63), as: UTF8.self)
    }

    /// The name of a `UNIQUE` constraint over `columns` of `table` (`tag_name_key`),
    /// PostgreSQL's own default name for it.
    static func uniqueConstraintName(_ table: String, columns: [String]) -> String {
        identifier(table, columns.joined(separator: "_"), "key")
    }
}
