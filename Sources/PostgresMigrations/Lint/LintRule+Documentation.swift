extension LintRule {
    /// The rule's documentation as a DocC article (the catalog's `Rules/<id>.md` files are
    /// this text; a test keeps them equal).
    public var documentationArticle: String {
        var text = "# \(id)\n\n\(title).\n\n"
        text += "**\(level == .style ? "Style rule (`lint --style`)" : severity == .error ? "Error" : "Warning")**"
        if let lock { text += " · lock: \(lock)" }
        text += growsWithTable ? " · a warning on live tables under 1 MB\n\n" : "\n\n"
        text += "## Why\n\n\(why)\n\n## Fix\n\n\(fix)\n\n"
        text += "## Reported\n\n```sql\n\(reported)\n```\n\n## Not reported\n\n```sql\n\(safe)\n```\n\n"
        text += "Silence it for one statement with `-- lint:ignore \(id)` on the line before it.\n"
        return text
    }
}
