import Foundation

/// Evaluates a ``PredicateNode`` in memory against managed objects, with the same answers
/// as its SQL (``PredicateSQL``) gives for the same rows.
///
/// The rules both sides share: a comparison with NULL is false except `== nil` and `!=`
/// (so `NOT` of it is true); two NULL key paths are equal; strings compare by code point
/// (as the `C` and `C.UTF-8` collations do); `[c]` and `[d]` fold through ``TextFolding``;
/// `@sum` of nothing is 0 while `@avg`, `@min` and `@max` of nothing are NULL; LIKE's `*`
/// and `?` match code points. Objects reached through relationships are read from the
/// context (which may fault them in).
struct PredicateEvaluator {
    /// SUBQUERY variables in scope.
    private var scopes: [String: ManagedObject] = [:]
    private var expressions: [String: NSRegularExpression] = [:]

    init() {}

    /// True when `object` matches `node`.
    mutating func evaluate(_ node: PredicateNode, on object: ManagedObject) throws -> Bool {
        switch node {
        case .constant(let value):
            return value
        case .not(let inner):
            return try !evaluate(inner, on: object)
        case .and(let terms):
            for term in terms where try !evaluate(term, on: object) { return false }
            return true
        case .or(let terms):
            for term in terms where try evaluate(term, on: object) { return true }
            return false
        case .comparison(let comparison):
            return try self.comparison(comparison, on: object)
        }
    }

    // MARK: Key paths

    private enum Resolved {
        case value(AttributeValue, AttributeType?, key: String)
        /// The objects of a to-many (or key-less to-one) relationship, then the rest of the path.
        case many([ManagedObject], rest: [String], key: String)
    }

    /// Walks `path` from `start`; past a nil to-one the walk goes on through the model only,
    /// so an unknown key is an error whether or not a row has a value there.
    private func resolve(_ path: [String], from start: ManagedObject) throws -> Resolved {
        var current: ManagedObject? = start
        var entity = start.entity
        var components = path
        if let first = components.first, first.hasPrefix("$") {
            guard let scoped = scopes[String(first.dropFirst())] else {
                throw PostgresDataError.invalidRequest("the variable \(first) is not defined here; use it inside SUBQUERY(…, \(first), …)")
            }
            current = scoped
            entity = scoped.entity
            components.removeFirst()
            if components.isEmpty { return .value(.object(scoped.objectID), .integer64, key: first) }
        }
        let key = path.joined(separator: ".")
        for (position, name) in components.enumerated() {
            guard let index = entity.propertyIndex(named: name) else {
                if name == "id" || name == "objectID" || name == "self" {
                    return .value(current.map { .object($0.objectID) } ?? .null, .integer64, key: key)
                }
                // `address.city`: an element of a composite attribute, the path's last step.
                if position == components.count - 2, let element = entity.compositeElement(name, components[position + 1]),
                   let elementIndex = entity.propertyIndex(named: element.name) {
                    current?.willAccessValues()
                    return .value(current?.values[elementIndex] ?? .null, element.attributeType, key: key)
                }
                throw PredicateSQL.unknownKey(name, in: entity, path: key)
            }
            current?.willAccessValues()
            switch entity.properties[index] {
            case .attribute(let attribute):
                guard position == components.count - 1 else {
                    throw PostgresDataError.invalidRequest("\(entity.name).\(name) is an attribute, so the key path \(key) cannot go past it")
                }
                return .value(current?.values[index] ?? .null, attribute.attributeType, key: key)
            case .relationship(let relationship):
                let rest = Array(components[(position + 1)...])
                guard !relationship.isToMany, case .foreignKey = entity.storage(of: index) else {
                    guard let owner = current else { return .many([], rest: rest, key: key) }
                    guard let context = owner.managedObjectContext else { throw PostgresDataError.noContext(owner.objectID) }
                    return .many(context.relatedObjects(of: owner, at: index), rest: rest, key: key)
                }
                let value = current?.values[index] ?? .null
                if rest.isEmpty || rest == ["id"] || rest == ["objectID"] { return .value(value, .integer64, key: key) }
                if case .object(let id) = value, let owner = current {
                    guard let context = owner.managedObjectContext else { throw PostgresDataError.noContext(owner.objectID) }
                    current = context.object(with: id)
                } else {
                    current = nil
                }
                entity = entity.destination(of: index)
            }
        }
        return .value(current.map { .object($0.objectID) } ?? .null, .integer64, key: key)
    }

    /// The value at a key path (through to-one relationships) of `object`, for sorting.
    func value(at key: String, of object: ManagedObject) throws -> AttributeValue {
        switch try resolve(key.split(separator: ".").map(String.init), from: object) {
        case .value(let value, _, _): return value
        case .many: throw PostgresDataError.invalidRequest("cannot sort by \(key): it goes through a to-many relationship")
        }
    }

    // MARK: Values

    private struct Operand {
        var value: AttributeValue
        var type: AttributeType?
        var key: String?
    }

    private mutating func operand(_ value: PredicateValue, on object: ManagedObject, expected: AttributeType?,
                                  key: String?) throws -> Operand {
        switch value {
        case .keyPath(let path):
            switch try resolve(path, from: object) {
            case .value(let value, let type, let key):
                return Operand(value: value, type: type, key: key)
            case .many(_, _, let key):
                throw PostgresDataError.invalidRequest("\(key) goes through a to-many relationship: compare it with ANY, ALL or NONE, or use @count")
            }
        case .constant(let constant):
            if constant.isNull { return Operand(value: .null, type: expected) }
            if case .object = constant { return Operand(value: constant, type: expected) }
            let type = PredicateSQL.comparisonType(of: constant, expected: expected)
            return Operand(value: try PredicateSQL.convert(constant, to: type, key: key), type: type)
        case .count(let path):
            guard case .many(let objects, let rest, _) = try resolve(path, from: object), rest.isEmpty else {
                throw PostgresDataError.invalidRequest("@count needs a to-many relationship, and \(path.joined(separator: ".")) is not one")
            }
            return Operand(value: .integer(Int64(objects.count)), type: .integer64)
        case .aggregate(let function, let collection, let keyPath):
            guard case .many(let objects, let rest, _) = try resolve(collection, from: object), rest.isEmpty else {
                throw PostgresDataError.invalidRequest("@\(function.rawValue) needs a to-many relationship, and \(collection.joined(separator: ".")) is not one")
            }
            var values: [AttributeValue] = []
            var type: AttributeType?
            for related in objects {
                guard case .value(let value, let valueType, _) = try resolve(keyPath, from: related) else {
                    throw PostgresDataError.invalidRequest("@\(function.rawValue).\(keyPath.joined(separator: ".")) must name an attribute")
                }
                type = valueType
                if !value.isNull { values.append(value) }
            }
            return try Self.aggregate(function, of: values, type: type)
        case .subquery(let collection, let variable, let predicate):
            guard case .many(let objects, let rest, _) = try resolve(collection, from: object), rest.isEmpty else {
                throw PostgresDataError.invalidRequest("SUBQUERY needs a to-many relationship, and \(collection.joined(separator: ".")) is not one")
            }
            let saved = scopes[variable]
            defer { scopes[variable] = saved }
            var count: Int64 = 0
            for related in objects {
                scopes[variable] = related
                if try evaluate(predicate, on: related) { count += 1 }
            }
            return Operand(value: .integer(count), type: .integer64)
        case .arithmetic(let op, let left, let right):
            let lhs = try operand(left, on: object, expected: expected, key: key)
            let rhs = try operand(right, on: object, expected: lhs.type ?? expected, key: key)
            return Operand(value: try Self.arithmetic(op, lhs.value, rhs.value), type: lhs.type ?? rhs.type)
        case .now:
            return Operand(value: .date(Date()), type: .date)
        case .cast(let inner, let type):
            let value = try operand(inner, on: object, expected: nil, key: key)
            return Operand(value: try Self.cast(value.value, to: type, key: value.key), type: type)
        case .function(let inner, let method):
            let value = try operand(inner, on: object, expected: nil, key: key)
            return try Self.call(method, on: value.value, type: value.type, key: value.key)
        case .negated(let inner):
            let value = try operand(inner, on: object, expected: expected, key: key)
            return Operand(value: try Self.arithmetic(.subtract, .integer(0), value.value), type: value.type)
        case .list:
            throw PostgresDataError.invalidRequest("a list is only allowed after IN or BETWEEN")
        case .variable(let name):
            throw PostgresDataError.invalidRequest("the variable $\(name) has no value; bind it with substituting([\"\(name)\": …])")
        }
    }

    /// `CAST(value, type)` as the SQL compiler reads it: numbers and dates through seconds
    /// since 2001-01-01 (Core Data's reference date), strings and numbers both ways.
    static func cast(_ value: AttributeValue, to type: AttributeType, key: String?) throws -> AttributeValue {
        if value.isNull { return .null }
        switch (value, type) {
        case (.date(let date), .double): return .double(date.timeIntervalSinceReferenceDate)
        case (.date(let date), .decimal): return .decimal(Decimal(date.timeIntervalSinceReferenceDate))
        case (_, .date): if let seconds = value.numericValue { return .date(Date(timeIntervalSinceReferenceDate: seconds)) }
        case (.string(let text), .double): if let number = Double(text.trimmingCharacters(in: .whitespaces)) { return .double(number) }
        case (.string(let text), .decimal): if let number = Decimal(string: text.trimmingCharacters(in: .whitespaces)) { return .decimal(number) }
        case (.string, .string): return value
        case (_, .string):
            if let decimal = value.decimalValue, value.isDecimal { return .string("\(decimal)") }
            if case .integer(let integer) = value { return .string(String(integer)) }
            if case .boolean(let flag) = value { return .string(flag ? "true" : "false") }
            // As PostgreSQL writes a double: no ".0" on a whole number.
            if let number = value.numericValue {
                return .string(number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number))
            }
        case (_, .double): if let number = value.numericValue { return .double(number) }
        case (_, .decimal): if let decimal = value.decimalValue { return .decimal(decimal) }
        default: break
        }
        throw PostgresDataError.invalidRequest("CAST of \(key ?? "a value") (\(value.typeName)) to \(type) has no meaning")
    }

    /// `FUNCTION(value, 'method')` as the SQL compiler reads it.
    private static func call(_ method: PredicateValue.Method, on value: AttributeValue, type: AttributeType?, key: String?) throws -> Operand {
        let resultType: AttributeType = switch method {
        case .uppercaseString, .lowercaseString, .stringValue: .string
        case .length, .integerValue: .integer64
        case .doubleValue: .double
        case .boolValue: .boolean
        }
        func refused() -> PostgresDataError {
            .invalidRequest("FUNCTION(\(key ?? "a value"), '\(method.rawValue)') needs \(method.receiver), and \(key ?? "the value") is \(type.map { "\($0)" } ?? value.typeName)")
        }
        if let type, !method.accepts(type) { throw refused() }
        if value.isNull { return Operand(value: .null, type: resultType) }
        switch (method, value) {
        case (.uppercaseString, .string(let text)):
            // Character by character, as PostgreSQL's upper() maps: "ß" stays "ß".
            var upper = String.UnicodeScalarView()
            for scalar in text.unicodeScalars {
                let mapped = scalar.properties.uppercaseMapping.unicodeScalars
                if mapped.count == 1, let single = mapped.first { upper.append(single) } else { upper.append(scalar) }
            }
            return Operand(value: .string(String(upper)), type: resultType)
        case (.lowercaseString, .string(let text)): return Operand(value: .string(text.lowercased()), type: resultType)
        case (.length, .string(let text)): return Operand(value: .integer(Int64(text.utf16.count)), type: resultType)
        case (.stringValue, _): return Operand(value: try cast(value, to: .string, key: key), type: resultType)
        case (.doubleValue, _): return Operand(value: try cast(value, to: .double, key: key), type: resultType)
        case (.integerValue, .boolean(let flag)): return Operand(value: .integer(flag ? 1 : 0), type: resultType)
        case (.integerValue, _):
            guard let number = value.numericValue, number.isFinite, abs(number) < 9.2e18 else { throw refused() }
            return Operand(value: .integer(Int64(number.rounded(.towardZero))), type: resultType)
        case (.boolValue, .boolean): return Operand(value: value, type: resultType)
        case (.boolValue, _):
            guard let number = value.numericValue else { throw refused() }
            return Operand(value: .boolean(number != 0), type: resultType)
        default: throw refused()
        }
    }

    private static func aggregate(_ function: PredicateValue.Aggregate, of values: [AttributeValue],
                                  type: AttributeType?) throws -> Operand {
        switch function {
        case .sum:
            var total: AttributeValue = .integer(0)
            for value in values { total = try arithmetic(.add, total, value) }
            if let type, !type.isInteger, case .integer(let integer) = total {
                total = try PredicateSQL.convert(.integer(integer), to: type, key: nil)
            }
            return Operand(value: total, type: type.map { $0.isInteger ? .integer64 : $0 })
        case .avg:
            guard !values.isEmpty else { return Operand(value: .null, type: .double) }
            let sum = values.reduce(0.0) { $0 + ($1.numericValue ?? 0) }
            return Operand(value: .double(sum / Double(values.count)), type: .double)
        case .min, .max:
            var best: AttributeValue = .null
            for value in values {
                guard !best.isNull, let order = order(value, best) else { best = value; continue }
                if order == (function == .min ? .orderedAscending : .orderedDescending) { best = value }
            }
            return Operand(value: best, type: type)
        }
    }

    /// `a op b` as PostgreSQL computes it: integers stay integers (division truncates,
    /// overflow and division by zero are errors), decimals stay decimal, else double.
    static func arithmetic(_ op: PredicateValue.Arithmetic, _ a: AttributeValue, _ b: AttributeValue) throws -> AttributeValue {
        if a.isNull || b.isNull { return .null }
        if case .string(let x) = a, case .string(let y) = b {
            guard op == .add else { throw PostgresDataError.invalidRequest("strings can only be joined with +, not combined with \(op.rawValue)") }
            return .string(x + y)
        }
        if op == .power {
            guard let x = a.numericValue, let y = b.numericValue else {
                throw PostgresDataError.invalidRequest("cannot compute \(a.typeName) ** \(b.typeName): arithmetic needs numbers")
            }
            return .double(Foundation.pow(x, y))
        }
        if case .integer(let x) = a, case .integer(let y) = b {
            let (result, overflow): (Int64, Bool)
            switch op {
            case .add: (result, overflow) = x.addingReportingOverflow(y)
            case .subtract: (result, overflow) = x.subtractingReportingOverflow(y)
            case .multiply: (result, overflow) = x.multipliedReportingOverflow(by: y)
            case .divide:
                guard y != 0 else { throw PostgresDataError.invalidRequest("division by zero in a predicate") }
                (result, overflow) = x.dividedReportingOverflow(by: y)
            case .power: (result, overflow) = (0, true)  // Handled above.
            }
            guard !overflow else { throw PostgresDataError.invalidRequest("integer out of range in a predicate (\(x) \(op.rawValue) \(y))") }
            return .integer(result)
        }
        if let x = a.decimalValue, let y = b.decimalValue, a.isDecimal || b.isDecimal {
            switch op {
            case .add: return .decimal(x + y)
            case .subtract: return .decimal(x - y)
            case .multiply: return .decimal(x * y)
            case .divide:
                guard !y.isZero else { throw PostgresDataError.invalidRequest("division by zero in a predicate") }
                return .decimal(x / y)
            case .power: return .double(Foundation.pow(a.numericValue ?? 0, b.numericValue ?? 0))
            }
        }
        guard let x = a.numericValue, let y = b.numericValue else {
            throw PostgresDataError.invalidRequest("cannot compute \(a.typeName) \(op.rawValue) \(b.typeName): arithmetic needs numbers")
        }
        switch op {
        case .add: return .double(x + y)
        case .subtract: return .double(x - y)
        case .multiply: return .double(x * y)
        case .divide:
            guard y != 0 else { throw PostgresDataError.invalidRequest("division by zero in a predicate") }
            return .double(x / y)
        case .power: return .double(Foundation.pow(x, y))
        }
    }

    /// The order of two non-NULL values as PostgreSQL orders them; nil when either is NULL or
    /// they cannot be compared.
    static func order(_ a: AttributeValue, _ b: AttributeValue) -> ComparisonResult? {
        func compare<T: Comparable>(_ x: T, _ y: T) -> ComparisonResult {
            x < y ? .orderedAscending : (x == y ? .orderedSame : .orderedDescending)
        }
        func bytes<S: Sequence<UInt8>>(_ x: S, _ y: S) -> ComparisonResult {
            if x.elementsEqual(y) { return .orderedSame }
            return x.lexicographicallyPrecedes(y) ? .orderedAscending : .orderedDescending
        }
        switch (a, b) {
        case (.null, _), (_, .null): return nil
        case (.integer(let x), .integer(let y)): return compare(x, y)
        case (.string(let x), .string(let y)): return bytes(x.utf8, y.utf8)
        case (.boolean(let x), .boolean(let y)): return compare(x ? 1 : 0, y ? 1 : 0)
        case (.date(let x), .date(let y)): return compare(x.timeIntervalSinceReferenceDate, y.timeIntervalSinceReferenceDate)
        case (.uuid(let x), .uuid(let y)): return bytes(withUnsafeBytes(of: x.uuid) { Array($0) }, withUnsafeBytes(of: y.uuid) { Array($0) })
        case (.data(let x), .data(let y)): return bytes(x, y)
        case (.url(let x), .url(let y)): return bytes(x.absoluteString.utf8, y.absoluteString.utf8)
        case (.json(let x), .json(let y)): return x == y ? .orderedSame : nil
        case (.object(let x), .object(let y)):
            if x == y { return .orderedSame }
            guard let p = x.primaryKey, let q = y.primaryKey, x.entity === y.entity else { return nil }
            return compare(p, q)
        case (.object(let x), .integer(let y)):
            return x.primaryKey.map { compare($0, y) }
        case (.integer(let x), .object(let y)):
            return y.primaryKey.map { compare(x, $0) }
        default:
            if a.isDecimal || b.isDecimal, let x = a.decimalValue, let y = b.decimalValue { return compare(x, y) }
            if let x = a.numericValue, let y = b.numericValue { return compare(x, y) }
            return nil
        }
    }

    // MARK: Comparisons

    private mutating func comparison(_ comparison: PredicateComparison, on object: ManagedObject) throws -> Bool {
        if case .keyPath(let path) = comparison.left, case .many(let objects, let rest, let key) = try resolve(path, from: object) {
            guard comparison.quantifier != .direct || comparison.op == .contains || comparison.op == .in else {
                throw PostgresDataError.invalidRequest("\(key) goes through a to-many relationship: say ANY, ALL or NONE (ANY \(key) …)")
            }
            let inner = comparison.perElement(rest: rest)
            var matches = 0
            for related in objects where try self.comparison(inner, on: related) { matches += 1 }
            switch comparison.quantifier {
            case .all: return matches == objects.count
            case .none: return matches == 0
            case .any, .direct: return matches > 0
            }
        }
        if comparison.op == .in, case .keyPath(let path) = comparison.right,
           case .many(let objects, let rest, _) = try resolve(path, from: object) {
            let inner = comparison.membership(rest: rest)
            for related in objects where try self.comparison(inner, on: related) { return true }
            return false
        }
        let left = try operand(comparison.left, on: object, expected: nil, key: nil)
        switch comparison.op {
        case .between:
            guard case .list(let bounds) = comparison.right, bounds.count == 2 else {
                throw PostgresDataError.invalidRequest("BETWEEN needs two bounds: \(left.key ?? "value") BETWEEN {low, high}")
            }
            let low = try operand(bounds[0], on: object, expected: left.type, key: left.key).value
            let high = try operand(bounds[1], on: object, expected: left.type, key: left.key).value
            guard let lower = Self.order(low, left.value), let upper = Self.order(left.value, high) else { return false }
            return lower != .orderedDescending && upper != .orderedDescending
        case .in:
            guard case .list(let elements) = comparison.right else {
                let right = try operand(comparison.right, on: object, expected: .string, key: left.key)
                // `name IN 'some text'`: the name is a substring of the text, as Core Data reads it.
                return try stringMatch(right, left, .contains, comparison)
            }
            let type = left.type ?? .string
            let subject = fold(left.value, comparison)
            var containsNull = false
            for element in elements {
                if case .constant(let constant) = element, constant.isNull { containsNull = true; continue }
                let value = try operand(element, on: object, expected: type, key: left.key).value
                if Self.order(subject, fold(value, comparison)) == .orderedSame { return true }
            }
            return containsNull && left.value.isNull
        case .contains, .beginsWith, .endsWith, .like, .matches:
            let right = try operand(comparison.right, on: object, expected: .string, key: left.key)
            return try stringMatch(left, right, comparison.op, comparison)
        case .equal, .notEqual, .less, .lessOrEqual, .greater, .greaterOrEqual:
            if case .constant(.null) = comparison.right {
                switch comparison.op {
                case .equal: return left.value.isNull
                case .notEqual: return !left.value.isNull
                default: return false
                }
            }
            let right = try operand(comparison.right, on: object, expected: left.type, key: left.key)
            let lhs = fold(left.value, comparison)
            let rhs = fold(right.value, comparison)
            let order = Self.order(lhs, rhs)
            switch comparison.op {
            case .equal:
                return order == .orderedSame || (lhs.isNull && rhs.isNull && !Self.isConstant(comparison.right))
            case .notEqual:
                if lhs.isNull || rhs.isNull { return lhs.isNull != rhs.isNull }
                return order != .orderedSame
            case .less: return order == .orderedAscending
            case .lessOrEqual: return order == .orderedAscending || order == .orderedSame
            case .greater: return order == .orderedDescending
            default: return order == .orderedDescending || order == .orderedSame
            }
        }
    }

    private static func isConstant(_ value: PredicateValue) -> Bool {
        if case .constant = value { return true }
        return false
    }

    private func fold(_ value: AttributeValue, _ comparison: PredicateComparison) -> AttributeValue {
        guard case .string(let string) = value, comparison.caseInsensitive || comparison.diacriticInsensitive else { return value }
        return .string(TextFolding.fold(string, caseInsensitive: comparison.caseInsensitive,
                                        diacriticInsensitive: comparison.diacriticInsensitive))
    }

    private mutating func stringMatch(_ left: Operand, _ right: Operand, _ op: PredicateComparison.Operator,
                                      _ comparison: PredicateComparison) throws -> Bool {
        if let type = left.type, type != .string {
            throw PostgresDataError.invalidRequest("\(op.rawValue) compares strings, and \(left.key ?? "the left side") is \(type)")
        }
        guard case .string(var subject) = left.value, case .string(var pattern) = right.value else { return false }
        if op == .matches {
            if comparison.diacriticInsensitive {
                subject = TextFolding.fold(subject, caseInsensitive: false, diacriticInsensitive: true)
                pattern = TextFolding.fold(pattern, caseInsensitive: false, diacriticInsensitive: true)
            }
            return try regularExpression(pattern, caseInsensitive: comparison.caseInsensitive).firstMatch(
                in: subject, range: NSRange(subject.startIndex..., in: subject)) != nil
        }
        subject = TextFolding.fold(subject, caseInsensitive: comparison.caseInsensitive, diacriticInsensitive: comparison.diacriticInsensitive)
        pattern = TextFolding.fold(pattern, caseInsensitive: comparison.caseInsensitive, diacriticInsensitive: comparison.diacriticInsensitive)
        let s = Array(subject.unicodeScalars), p = Array(pattern.unicodeScalars)
        switch op {
        case .contains:
            if p.isEmpty { return true }
            guard s.count >= p.count else { return false }
            return (0...(s.count - p.count)).contains { s[$0..<($0 + p.count)].elementsEqual(p) }
        case .beginsWith: return s.starts(with: p)
        case .endsWith: return s.reversed().starts(with: p.reversed())
        default: return Self.like(s[...], p[...])
        }
    }

    /// Core Data's LIKE: `*` matches any run of code points, `?` exactly one, and a
    /// backslash makes the next code point literal (`a\*b` matches "a*b").
    static func like(_ subject: ArraySlice<Unicode.Scalar>, _ pattern: ArraySlice<Unicode.Scalar>) -> Bool {
        var s = subject.startIndex, p = pattern.startIndex
        var star: (pattern: Int, subject: Int)?
        while s < subject.endIndex {
            let escaped = p + 1 < pattern.endIndex && pattern[p] == "\\"
            if p < pattern.endIndex, pattern[p] == "*" {
                star = (p, s)
                p += 1
            } else if escaped, pattern[p + 1] == subject[s] {
                p += 2
                s += 1
            } else if !escaped, p < pattern.endIndex, pattern[p] == "?" || pattern[p] == subject[s] {
                p += 1
                s += 1
            } else if let last = star {
                p = last.pattern + 1
                s = last.subject + 1
                star = (last.pattern, last.subject + 1)
            } else {
                return false
            }
        }
        while p < pattern.endIndex, pattern[p] == "*" { p += 1 }
        return p == pattern.endIndex
    }

    /// The whole-string ICU expression for a MATCHES pattern, as Core Data runs it.
    private mutating func regularExpression(_ pattern: String, caseInsensitive: Bool) throws -> NSRegularExpression {
        let cacheKey = (caseInsensitive ? "i:" : "s:") + pattern
        if let cached = expressions[cacheKey] { return cached }
        let expression = try RegularExpressionDialect.icu(pattern, caseInsensitive: caseInsensitive)
        expressions[cacheKey] = expression
        return expression
    }
}

extension AttributeValue {
    var isDecimal: Bool {
        if case .decimal = self { return true }
        return false
    }

    var decimalValue: Decimal? {
        switch self {
        case .integer(let value): Decimal(value)
        case .double(let value): Decimal(value)
        case .float(let value): Decimal(Double(value))
        case .decimal(let value): value
        default: nil
        }
    }
}

extension FetchPredicate {
    /// True when `object` matches the predicate, evaluated in memory on the object's current
    /// (possibly unsaved) values. Call it on the object's context's queue.
    ///
    /// Core Data equivalent: `NSPredicate.evaluate(with:)`. The answer agrees with what a
    /// fetch would select for the same values: the predicate is checked against the model
    /// first, with the same errors.
    public func evaluate(with object: ManagedObject) throws -> Bool {
        var compiler = PredicateSQL(entity: object.entity)
        _ = try compiler.condition(node)
        var evaluator = PredicateEvaluator()
        return try evaluator.evaluate(node, on: object)
    }
}
