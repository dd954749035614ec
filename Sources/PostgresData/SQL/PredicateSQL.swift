import Foundation
import PostgresClient

/// Compiles a ``PredicateNode`` for one entity into a SQL condition over the alias `t`, with
/// every constant a bind parameter and every identifier from the model, quoted.
///
/// To-one key paths join (`LEFT JOIN todo_list AS j1 ON j1.id = t.list_id`); to-many key
/// paths become `EXISTS` subqueries (`ANY`, `NONE`, `ALL`), `@count` and `@sum/@avg/@min/@max`
/// scalar subqueries, and `SUBQUERY(…)` a counted subquery. `!=` counts NULL as different
/// (`IS DISTINCT FROM`), as in-memory evaluation does.
struct PredicateSQL {
    let entity: EntityDescription
    var bindings: PostgresBindings
    /// Constants written into the SQL as literals instead of bound (a `CHECK` constraint
    /// from the model has no parameters); only values of the model, never of a request.
    var inlinesConstants = false
    /// The alias of the entity's table; empty for bare column names (a `CHECK`).
    var rootAlias = "t"
    /// `LEFT JOIN` clauses for to-one key paths, in order.
    private(set) var joins: [String] = []
    private var joinAliases: [String: String] = [:]
    private(set) var subqueryCount = 0
    /// Names that stand for SQL expressions (a `HAVING` predicate's aggregates), by name.
    var namedExpressions: [String: (sql: String, type: AttributeType)] = [:]
    /// SUBQUERY variables in scope: name → (entity, alias).
    private var scopes: [String: (EntityDescription, String)] = [:]

    init(entity: EntityDescription, bindings: PostgresBindings = PostgresBindings()) {
        self.entity = entity
        self.bindings = bindings
    }

    /// True when `path` is the name of one of ``namedExpressions``.
    private func isNamedExpression(_ path: [String]) -> Bool {
        path.count == 1 && namedExpressions[path[0]] != nil
    }

    /// Makes `$name` stand for the row of `entity` under `alias` (a fetched property's
    /// `$FETCH_SOURCE`): `$name` is its key, `$name.key` its values.
    mutating func bindVariable(_ name: String, to entity: EntityDescription, alias: String) {
        scopes[name] = (entity, alias)
    }

    /// The condition for `node`.
    mutating func condition(_ node: PredicateNode) throws -> String {
        try condition(node, entity: entity, alias: rootAlias)
    }

    private mutating func condition(_ node: PredicateNode, entity: EntityDescription, alias: String) throws -> String {
        switch node {
        case .constant(let value):
            return value ? "TRUE" : "FALSE"
        case .not(let inner):
            // Two-valued, as in memory: a comparison with NULL is false, so its negation is true.
            return "(\(try condition(inner, entity: entity, alias: alias))) IS NOT TRUE"
        case .and(let terms):
            return try terms.map { "(\(try condition($0, entity: entity, alias: alias)))" }.joined(separator: " AND ")
        case .or(let terms):
            return try terms.map { "(\(try condition($0, entity: entity, alias: alias)))" }.joined(separator: " OR ")
        case .comparison(let comparison):
            return try self.comparison(comparison, entity: entity, alias: alias)
        }
    }

    // MARK: Key paths

    /// A resolved key path: a column expression and its type, or a to-many step.
    private enum Resolved {
        case column(String, AttributeType, key: String)
        /// A to-many relationship of `owner` (alias) at `index`, then the rest of the path.
        case toMany(owner: EntityDescription, alias: String, index: Int, rest: [String], key: String)
    }

    private mutating func resolve(_ path: [String], entity start: EntityDescription, alias start_: String) throws -> Resolved {
        var entity = start
        var alias = start_
        var components = path
        if let first = components.first, first.hasPrefix("$") {
            guard let scope = scopes[String(first.dropFirst())] else {
                throw PostgresDataError.invalidRequest("the variable \(first) is not defined here; use it inside SUBQUERY(…, \(first), …)")
            }
            (entity, alias) = scope
            components.removeFirst()
            if components.isEmpty { return .column(Self.qualified(alias, "\"id\""), .integer64, key: first) }
        }
        let key = path.joined(separator: ".")
        for (position, name) in components.enumerated() {
            guard let index = entity.propertyIndex(named: name) else {
                if name == "id" || name == "objectID" || name == "self" {
                    return .column(Self.qualified(alias, "\"id\""), .integer64, key: key)
                }
                // `address.city`: an element of a composite attribute, the path's last step.
                if position == components.count - 2, let element = entity.compositeElement(name, components[position + 1]) {
                    return .column(Self.qualified(alias, quoteIdentifier(element.columnName)), element.attributeType, key: key)
                }
                throw Self.unknownKey(name, in: entity, path: key)
            }
            switch entity.properties[index] {
            case .attribute(let attribute):
                guard position == components.count - 1 else {
                    throw PostgresDataError.invalidRequest("\(entity.name).\(name) is an attribute, so the key path \(key) cannot go past it")
                }
                return .column(Self.qualified(alias, quoteIdentifier(attribute.columnName)), attribute.attributeType, key: key)
            case .relationship(let relationship):
                let rest = Array(components[(position + 1)...])
                guard !relationship.isToMany, case .foreignKey = entity.storage(of: index) else {
                    // To-many, or the side of a one-to-one without the column: a subquery.
                    return .toMany(owner: entity, alias: alias, index: index, rest: rest, key: key)
                }
                let column = "\(alias).\(quoteIdentifier(entity.columnName(of: index)))"
                if rest.isEmpty { return .column(column, .integer64, key: key) }
                if rest == ["id"] || rest == ["objectID"] { return .column(column, .integer64, key: key) }
                let destination = entity.destination(of: index)
                let joinKey = "\(alias).\(name)"
                if let existing = joinAliases[joinKey] {
                    alias = existing
                } else {
                    let joined = "j\(joinAliases.count + 1)"
                    joins.append("LEFT JOIN \(quoteIdentifier(destination.tableName)) AS \(joined) ON \(joined).\"id\" = \(column)")
                    joinAliases[joinKey] = joined
                    alias = joined
                }
                entity = destination
            }
        }
        return .column(Self.qualified(alias, "\"id\""), .integer64, key: key)
    }

    /// `alias."column"`, or the bare column without an alias.
    static func qualified(_ alias: String, _ column: String) -> String {
        alias.isEmpty ? column : "\(alias).\(column)"
    }

    static func unknownKey(_ name: String, in entity: EntityDescription, path: String) -> PostgresDataError {
        let names = entity.properties.map(\.name)
        let closest = names.min { distance($0.lowercased(), name.lowercased()) < distance($1.lowercased(), name.lowercased()) }
        let hint = closest.map { distance($0.lowercased(), name.lowercased()) <= max(2, name.count / 3) ? " Did you mean \"\($0)\"?" : "" } ?? ""
        return .invalidRequest("\(entity.name) has no property \"\(name)\" (in the key path \(path)).\(hint) Its properties are \(names.joined(separator: ", ")).")
    }

    /// Edit distance, for suggesting the key a typo meant.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty { return b.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var row = [i] + Array(repeating: 0, count: b.count)
            for j in 1...max(1, b.count) where !b.isEmpty {
                row[j] = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = row
        }
        return previous[b.count]
    }

    /// `FROM dest AS sN WHERE <link to owner>` for a to-many (or inverse to-one) relationship.
    private mutating func related(_ owner: EntityDescription, alias: String, index: Int) -> (from: String, destination: EntityDescription, alias: String) {
        subqueryCount += 1
        let sub = "s\(subqueryCount)"
        let destination = owner.destination(of: index)
        switch owner.storage(of: index) {
        case .joinTable(let join):
            let link = "l\(subqueryCount)"
            return ("FROM \(quoteIdentifier(join.name)) AS \(link) JOIN \(quoteIdentifier(destination.tableName)) AS \(sub) ON \(sub).\"id\" = \(link).\(quoteIdentifier(join.destinationColumn)) WHERE \(link).\(quoteIdentifier(join.sourceColumn)) = \(alias).\"id\"",
                    destination, sub)
        default:
            let column = destination.columnName(of: owner.inverseIndex(of: index))
            return ("FROM \(quoteIdentifier(destination.tableName)) AS \(sub) WHERE \(sub).\(quoteIdentifier(column)) = \(alias).\"id\"",
                    destination, sub)
        }
    }

    // MARK: Values

    /// An operand: SQL text and, when known, its attribute type.
    private struct Operand {
        var sql: String
        var type: AttributeType?
        var key: String?
    }

    private mutating func operand(_ value: PredicateValue, entity: EntityDescription, alias: String,
                                  expected: AttributeType?, key: String?) throws -> Operand {
        switch value {
        case .keyPath(let path) where isNamedExpression(path):
            // A HAVING predicate's name of a fetched expression.
            let (sql, type) = namedExpressions[path[0]]!
            return Operand(sql: sql, type: type, key: path[0])
        case .keyPath(let path):
            switch try resolve(path, entity: entity, alias: alias) {
            case .column(let sql, let type, let key):
                return Operand(sql: sql, type: type, key: key)
            case .toMany(_, _, _, _, let key):
                throw PostgresDataError.invalidRequest("\(key) goes through a to-many relationship: compare it with ANY, ALL or NONE, or use @count")
            }
        case .constant(let constant):
            // A constant without an expectation (on the left) has its own type: `7 IN {…}`.
            let type = constant.isNull ? expected : Self.comparisonType(of: constant, expected: expected)
            return Operand(sql: try bind(constant, as: type, key: key), type: type)
        case .count(let path):
            guard case .toMany(let owner, let ownerAlias, let index, let rest, _) = try resolve(path, entity: entity, alias: alias),
                  rest.isEmpty else {
                throw PostgresDataError.invalidRequest("@count needs a to-many relationship, and \(path.joined(separator: ".")) is not one")
            }
            let (from, _, _) = related(owner, alias: ownerAlias, index: index)
            return Operand(sql: "(SELECT count(*) \(from))", type: .integer64)
        case .aggregate(let function, let collection, let keyPath):
            guard case .toMany(let owner, let ownerAlias, let index, let rest, _) = try resolve(collection, entity: entity, alias: alias),
                  rest.isEmpty else {
                throw PostgresDataError.invalidRequest("@\(function.rawValue) needs a to-many relationship, and \(collection.joined(separator: ".")) is not one")
            }
            let (from, destination, sub) = related(owner, alias: ownerAlias, index: index)
            guard case .column(let column, let type, _) = try resolve(keyPath, entity: destination, alias: sub) else {
                throw PostgresDataError.invalidRequest("@\(function.rawValue).\(keyPath.joined(separator: ".")) must name an attribute")
            }
            let resultType: AttributeType = function == .avg ? .double : (function == .sum && type.isInteger ? .integer64 : type)
            let cast = function == .avg ? "::double precision" : (function == .sum && type.isInteger ? "::bigint" : "")
            // The sum of no values is 0, as in memory (SQL's sum gives NULL).
            let aggregate = function == .sum ? "coalesce(sum(\(column)), 0)" : "\(function.rawValue)(\(column))"
            return Operand(sql: "(SELECT \(aggregate)\(cast) \(from))", type: resultType)
        case .subquery(let collection, let variable, let predicate):
            guard case .toMany(let owner, let ownerAlias, let index, let rest, _) = try resolve(collection, entity: entity, alias: alias),
                  rest.isEmpty else {
                throw PostgresDataError.invalidRequest("SUBQUERY needs a to-many relationship, and \(collection.joined(separator: ".")) is not one")
            }
            let (from, destination, sub) = related(owner, alias: ownerAlias, index: index)
            let saved = scopes[variable]
            scopes[variable] = (destination, sub)
            defer { scopes[variable] = saved }
            let inner = try condition(predicate, entity: destination, alias: sub)
            return Operand(sql: "(SELECT count(*) \(from) AND (\(inner)))", type: .integer64)
        case .arithmetic(let op, let left, let right):
            let lhs = try operand(left, entity: entity, alias: alias, expected: expected, key: key)
            let rhs = try operand(right, entity: entity, alias: alias, expected: lhs.type ?? expected, key: key)
            if lhs.type == .string || rhs.type == .string {
                guard op == .add else {
                    throw PostgresDataError.invalidRequest("strings can only be joined with +, not combined with \(op.rawValue)")
                }
                return Operand(sql: "(\(lhs.sql) || \(rhs.sql))", type: .string)
            }
            if op == .power {
                return Operand(sql: "power((\(lhs.sql))::double precision, (\(rhs.sql))::double precision)", type: .double)
            }
            return Operand(sql: "(\(lhs.sql) \(op.rawValue) \(rhs.sql))", type: lhs.type ?? rhs.type)
        case .now:
            return Operand(sql: "now()", type: .date)
        case .cast(let inner, let type):
            let value = try operand(inner, entity: entity, alias: alias, expected: nil, key: key)
            switch (value.type, type) {
            case (let from?, .date) where from.isNumeric:
                return Operand(sql: "(timestamptz '2001-01-01 00:00:00+00' + (\(value.sql)) * interval '1 second')", type: .date)
            case (.date?, .double), (.date?, .decimal):
                return Operand(sql: "(extract(epoch from \(value.sql)) - 978307200)::\(type.sqlType)", type: type)
            case (.string?, _) where type.isNumeric:
                return Operand(sql: "(\(value.sql))::\(type.sqlType)", type: type)
            case (let from?, .string) where from != .codable:
                return Operand(sql: "(\(value.sql))::text", type: .string)
            case (let from?, _) where from == type || (from.isNumeric && type.isNumeric):
                return Operand(sql: "(\(value.sql))::\(type.sqlType)", type: type)
            default:
                throw PostgresDataError.invalidRequest("CAST of \(value.key ?? "a value") (\(value.type.map { "\($0)" } ?? "unknown type")) to \(type) has no meaning")
            }
        case .function(let inner, let method):
            let value = try operand(inner, entity: entity, alias: alias, expected: nil, key: key)
            if let type = value.type, !method.accepts(type) {
                throw PostgresDataError.invalidRequest("FUNCTION(\(value.key ?? "a value"), '\(method.rawValue)') needs \(method.receiver), and \(value.key ?? "the value") is \(type)")
            }
            switch method {
            case .uppercaseString: return Operand(sql: "upper(\(value.sql))", type: .string)
            case .lowercaseString: return Operand(sql: "lower(\(value.sql))", type: .string)
            case .length:
                // UTF-16 code units, as NSString counts: characters beyond the BMP count twice.
                return Operand(sql: "(char_length(\(value.sql)) + char_length(regexp_replace(\(value.sql), '[^\\U00010000-\\U0010FFFF]', '', 'g')))::int8", type: .integer64)
            case .stringValue: return try operand(.cast(inner, .string), entity: entity, alias: alias, expected: nil, key: key)
            case .doubleValue: return try operand(.cast(inner, .double), entity: entity, alias: alias, expected: nil, key: key)
            case .integerValue:
                if value.type == .boolean { return Operand(sql: "(\(value.sql))::int4::int8", type: .integer64) }
                return Operand(sql: "trunc((\(value.sql))::numeric)::int8", type: .integer64)
            case .boolValue:
                if value.type == .boolean { return value }
                return Operand(sql: "((\(value.sql)) <> 0)", type: .boolean)
            }
        case .negated(let inner):
            let value = try operand(inner, entity: entity, alias: alias, expected: expected, key: key)
            return Operand(sql: "(-\(value.sql))", type: value.type)
        case .list:
            throw PostgresDataError.invalidRequest("a list is only allowed after IN or BETWEEN")
        case .variable(let name) where scopes[name] != nil:
            let (_, scopeAlias) = scopes[name]!
            return Operand(sql: Self.qualified(scopeAlias, "\"id\""), type: .integer64, key: "$\(name)")
        case .variable(let name):
            throw PostgresDataError.invalidRequest("the variable $\(name) has no value; bind it with substituting([\"\(name)\": …])")
        }
    }

    /// A value expression (for a batch update's `SET`): its SQL and type.
    mutating func value(_ value: PredicateValue, expected: AttributeType?, key: String) throws -> (sql: String, type: AttributeType?) {
        let operand = try operand(value, entity: entity, alias: rootAlias, expected: expected, key: key)
        return (operand.sql, operand.type)
    }

    /// Appends a bind parameter for a constant, converted to the type it is compared with.
    private mutating func bind(_ value: AttributeValue, as type: AttributeType?, key: String?) throws -> String {
        guard !value.isNull else { return "NULL" }
        let type = Self.comparisonType(of: value, expected: type)
        let converted = try Self.convert(value, to: type, key: key)
        if inlinesConstants {
            guard let literal = SchemaPlan.literal(converted) else {
                throw PostgresDataError.invalidRequest("\(key ?? "a value") is compared with a \(converted.typeName) constant, which a CHECK constraint cannot spell")
            }
            return "\(literal)::\(type.sqlType)"
        }
        try bindings.append(type: type.postgresType) { buffer in try ValueCoding.encode(converted, as: type, into: &buffer) }
        return "$\(bindings.count)::\(type.sqlType)"
    }

    /// The type a constant is compared as: the other side's, except that a fractional number
    /// stays fractional against an integer (`weight < 2.5`, on either side, as in Core Data).
    static func comparisonType(of value: AttributeValue, expected: AttributeType?) -> AttributeType {
        let natural = naturalType(of: value)
        guard let expected else { return natural }
        if expected.isInteger && (natural == .double || natural == .float || natural == .decimal) { return natural }
        return expected
    }

    static func naturalType(of value: AttributeValue) -> AttributeType {
        switch value {
        case .integer: .integer64
        case .double: .double
        case .float: .float
        case .decimal: .decimal
        case .boolean: .boolean
        case .date: .date
        case .data: .binaryData
        case .uuid: .uuid
        case .url: .uri
        case .json: .codable
        case .object: .integer64
        case .string, .null: .string
        }
    }

    /// `value` as a value of `type`, or an error naming the key and both types.
    static func convert(_ value: AttributeValue, to type: AttributeType, key: String?) throws -> AttributeValue {
        if value.fits(type) { return value }
        switch (value, type) {
        case (.integer(let integer), .double): return .double(Double(integer))
        case (.integer(let integer), .float): return .float(Float(integer))
        case (.integer(let integer), .decimal): return .decimal(Decimal(integer))
        case (.double(let double), .decimal): return .decimal(Decimal(double))
        case (.double(let double), .float): return .float(Float(double))
        case (.float(let float), .double): return .double(Double(float))
        case (.object(let id), .integer64):
            guard let key = id.primaryKey else {
                throw PostgresDataError.invalidRequest("\(id) is not saved yet, so no row can match it")
            }
            return .integer(key)
        case (.url(let url), .string): return .string(url.absoluteString)
        case (.string(let string), .uri):
            guard let url = URL(string: string) else { break }
            return .url(url)
        default: break
        }
        throw PostgresDataError.invalidRequest("\(key ?? "the value") is \(type) and cannot be compared with a \(value.typeName) value")
    }

    /// The SQL of a sort key: a column through to-one relationships (joined as needed).
    mutating func sortExpression(_ key: String) throws -> (sql: String, type: AttributeType) {
        let path = key.split(separator: ".").map(String.init)
        guard case .column(let sql, let type, _) = try resolve(path, entity: entity, alias: "t") else {
            throw PostgresDataError.invalidRequest("cannot sort by \(key): it goes through a to-many relationship")
        }
        return (sql, type)
    }

    // MARK: Comparisons

    private mutating func comparison(_ comparison: PredicateComparison, entity: EntityDescription, alias: String) throws -> String {
        // A to-many key path on the left: quantified subquery.
        if case .keyPath(let path) = comparison.left, !isNamedExpression(path),
           case .toMany(let owner, let ownerAlias, let index, let rest, let key) = try resolve(path, entity: entity, alias: alias) {
            guard comparison.quantifier != .direct || comparison.op == .contains || comparison.op == .in else {
                throw PostgresDataError.invalidRequest("\(key) goes through a to-many relationship: say ANY, ALL or NONE (ANY \(key) …)")
            }
            let (from, destination, sub) = related(owner, alias: ownerAlias, index: index)
            let test = try self.comparison(comparison.perElement(rest: rest), entity: destination, alias: sub)
            switch comparison.quantifier {
            case .all: return "NOT EXISTS (SELECT 1 \(from) AND (\(test)) IS NOT TRUE)"
            case .none: return "NOT EXISTS (SELECT 1 \(from) AND (\(test)))"
            case .any, .direct: return "EXISTS (SELECT 1 \(from) AND (\(test)))"
            }
        }
        // `%@ IN tags`: membership in a to-many relationship.
        if comparison.op == .in, case .keyPath(let path) = comparison.right, !isNamedExpression(path),
           case .toMany(let owner, let ownerAlias, let index, let rest, _) = try resolve(path, entity: entity, alias: alias) {
            let (from, destination, sub) = related(owner, alias: ownerAlias, index: index)
            return "EXISTS (SELECT 1 \(from) AND (\(try self.comparison(comparison.membership(rest: rest), entity: destination, alias: sub))))"
        }
        let left = try operand(comparison.left, entity: entity, alias: alias, expected: nil, key: nil)
        switch comparison.op {
        case .between:
            guard case .list(let bounds) = comparison.right, bounds.count == 2 else {
                throw PostgresDataError.invalidRequest("BETWEEN needs two bounds: \(left.key ?? "value") BETWEEN {low, high}")
            }
            let low = try operand(bounds[0], entity: entity, alias: alias, expected: left.type, key: left.key)
            let high = try operand(bounds[1], entity: entity, alias: alias, expected: left.type, key: left.key)
            return "\(left.sql) BETWEEN \(low.sql) AND \(high.sql)"
        case .in:
            guard case .list(let elements) = comparison.right else {
                let right = try operand(comparison.right, entity: entity, alias: alias, expected: .string, key: left.key)
                // `name IN 'some text'`: the name is a substring of the text, as Core Data reads it.
                return try stringMatch(right, left, .contains, comparison)
            }
            if elements.isEmpty { return "FALSE" }
            let type = left.type ?? .string
            var values: [AttributeValue] = []
            var others: [String] = []
            for element in elements {
                if case .constant(let constant) = element, !constant.isNull {
                    values.append(try Self.convert(constant, to: type, key: left.key))
                } else {
                    others.append(try operand(element, entity: entity, alias: alias, expected: type, key: left.key).sql)
                }
            }
            var parts: [String] = []
            let folds = type == .string && (comparison.caseInsensitive || comparison.diacriticInsensitive)
            let lhs = folds ? fold(left.sql, comparison) : left.sql
            if !values.isEmpty {
                let folded = folds ? values.map { value in
                    guard case .string(let string) = value else { return value }
                    return .string(TextFolding.fold(string, caseInsensitive: comparison.caseInsensitive,
                                                    diacriticInsensitive: comparison.diacriticInsensitive))
                } : values
                try ValueCoding.appendArray(folded, of: type, to: &bindings)
                parts.append("\(lhs) = ANY($\(bindings.count)::\(type.sqlType)[])")
            }
            for other in others { parts.append("\(lhs) = \(folds ? fold(other, comparison) : other)") }
            if elements.contains(where: { $0 == .constant(.null) }) { parts.append("\(left.sql) IS NULL") }
            return parts.map { "(\($0))" }.joined(separator: " OR ")
        case .matches:
            if case .constant(.string(let pattern)) = comparison.right {
                // An ICU pattern, as Core Data reads it, bound as the ARE with its meaning.
                try Self.requireString(left, .matches)
                let folded = comparison.diacriticInsensitive
                    ? TextFolding.fold(pattern, caseInsensitive: false, diacriticInsensitive: true) : pattern
                let expression = try RegularExpressionDialect.postgres(folded, caseInsensitive: comparison.caseInsensitive)
                let subject = TextFolding.sql(left.sql, caseInsensitive: false, diacriticInsensitive: comparison.diacriticInsensitive)
                return "\(subject) ~ \(try bind(.string(expression), as: .string, key: left.key))"
            }
            let right = try operand(comparison.right, entity: entity, alias: alias, expected: .string, key: left.key)
            return try stringMatch(left, right, comparison.op, comparison)
        case .contains, .beginsWith, .endsWith, .like:
            let right = try operand(comparison.right, entity: entity, alias: alias, expected: .string, key: left.key)
            return try stringMatch(left, right, comparison.op, comparison)
        case .equal, .notEqual, .less, .lessOrEqual, .greater, .greaterOrEqual:
            if case .constant(.null) = comparison.right {
                switch comparison.op {
                case .equal: return "\(left.sql) IS NULL"
                case .notEqual: return "\(left.sql) IS NOT NULL"
                default: return "FALSE"
                }
            }
            if case .constant(.object(let id)) = comparison.right, id.primaryKey == nil,
               comparison.op == .equal || comparison.op == .notEqual {
                // An unsaved object: no stored row points at it yet.
                return comparison.op == .equal ? "FALSE" : "TRUE"
            }
            var right = try operand(comparison.right, entity: entity, alias: alias, expected: left.type, key: left.key)
            var lhs = left.sql
            if (comparison.caseInsensitive || comparison.diacriticInsensitive) && (left.type ?? .string) == .string {
                lhs = fold(lhs, comparison)
                right.sql = fold(right.sql, comparison)
            }
            // A constant, or the key of a bound row (`$FETCH_SOURCE`), is never NULL: plain `=`,
            // which an index serves.
            func boundRow(_ value: PredicateValue) -> Bool {
                if case .variable(let name) = value { scopes[name] != nil } else { false }
            }
            let constantRight = if case .constant = comparison.right { true } else { false }
            let plainEquality = constantRight || boundRow(comparison.right) || boundRow(comparison.left)
            switch comparison.op {
            // Two NULL key paths are equal, as in memory; a NULL never equals a constant.
            case .equal: return plainEquality ? "\(lhs) = \(right.sql)" : "\(lhs) IS NOT DISTINCT FROM \(right.sql)"
            case .notEqual: return "\(lhs) IS DISTINCT FROM \(right.sql)"
            default: return "\(lhs) \(comparison.op.rawValue) \(right.sql)"
            }
        }
    }

    /// Throws unless `left` is a string, for a string operator.
    private static func requireString(_ left: Operand, _ op: PredicateComparison.Operator) throws {
        guard (left.type ?? .string) == .string else {
            throw PostgresDataError.invalidRequest("\(op.rawValue) compares strings, and \(left.key ?? "the left side") is \(left.type.map { "\($0)" } ?? "not a string")")
        }
    }

    private mutating func stringMatch(_ left: Operand, _ right: Operand, _ op: PredicateComparison.Operator,
                                      _ comparison: PredicateComparison) throws -> String {
        try Self.requireString(left, op)
        if op == .matches {
            // A pattern read from a column: anchored on the server with ICU's newline rules
            // (mode `p`); `~*` ignores case.
            let subject = TextFolding.sql(left.sql, caseInsensitive: false, diacriticInsensitive: comparison.diacriticInsensitive)
            let pattern = TextFolding.sql(right.sql, caseInsensitive: false, diacriticInsensitive: comparison.diacriticInsensitive)
            return "\(subject) \(comparison.caseInsensitive ? "~*" : "~") ('(?p)\\A(?:' || \(pattern) || ')\\Z')"
        }
        let subject = fold(left.sql, comparison)
        // The pattern is built on the server from the bound value: LIKE's own wildcards in
        // the value are escaped, so `50%` matches only "50%".
        let escaped = "replace(replace(replace(\(fold(right.sql, comparison)), '\\', '\\\\'), '%', '\\%'), '_', '\\_')"
        switch op {
        case .contains: return "\(subject) LIKE ('%' || \(escaped) || '%')"
        case .beginsWith: return "\(subject) LIKE (\(escaped) || '%')"
        case .endsWith: return "\(subject) LIKE ('%' || \(escaped))"
        case .like:
            // Core Data's LIKE: `*` any characters, `?` one character, `\` before a character
            // makes it literal. Escaped pairs are set aside as private-use characters first,
            // then LIKE's own wildcards escaped, `*`/`?` translated, and the pairs put back.
            let pattern = fold(right.sql, comparison)
            let setAside = "replace(replace(replace(\(pattern), '\\\\', chr(57346)), '\\*', chr(57344)), '\\?', chr(57345))"
            let translated = "replace(replace(replace(replace(replace(\(setAside), '\\', '\\\\'), '%', '\\%'), '_', '\\_'), '*', '%'), '?', '_')"
            return "\(subject) LIKE replace(replace(replace(\(translated), chr(57344), '*'), chr(57345), '?'), chr(57346), '\\\\')"
        default:
            throw PostgresDataError.invalidRequest("\(op.rawValue) is not a string comparison")
        }
    }

    private func fold(_ sql: String, _ comparison: PredicateComparison) -> String {
        TextFolding.sql(sql, caseInsensitive: comparison.caseInsensitive, diacriticInsensitive: comparison.diacriticInsensitive)
    }
}
