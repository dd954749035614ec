/// How a derived attribute's value is computed (see
/// ``AttributeDescription/derivationExpression``), as the model resolves it.
enum Derivation: Sendable {
    /// From the row's own attributes: a generated column.
    case expression(PredicateValue)
    /// The number of objects of a to-many relationship (by property index).
    case count(relationship: Int)
    /// The sum of a destination attribute over a to-many relationship stored by a foreign
    /// key (property indices in this entity and in the destination).
    case sum(relationship: Int, attribute: Int)

    /// The derivation of `attribute` of `entity`, whose relationships resolved to `storage`
    /// and `destinations`; a problem in words when it cannot be one.
    static func resolve(_ attribute: AttributeDescription, of entity: EntityDescription,
                        storage: [Int: RelationshipStorage], destinations: [Int: EntityDescription]) -> Result<Derivation, DerivationProblem> {
        let label = "\(entity.name).\(attribute.name)"
        guard let format = attribute.derivationExpression else { return .failure(.init("\(label) is not derived")) }
        let value: PredicateValue
        do {
            var parser = try PredicateParser(format: format, arguments: [])
            value = try parser.parseExpression()
        } catch {
            return .failure(.init("\(label) is derived from \"\(format)\", which does not parse: \(error)"))
        }
        func toMany(_ path: [String]) -> Int? {
            guard path.count == 1, let index = entity.propertyIndex(named: path[0]),
                  entity.properties[index].relationship?.isToMany == true else { return nil }
            return index
        }
        let aggregateNeeds = "a derived aggregate must be a non-optional number: declare \(label) as Int (count) or as the summed attribute's type"
        switch value {
        case .count(let path):
            guard let relationship = toMany(path) else {
                return .failure(.init("\(label): @count needs a to-many relationship of \(entity.name), and \(path.joined(separator: ".")) is not one"))
            }
            guard attribute.attributeType.isInteger, !attribute.isOptional else { return .failure(.init(aggregateNeeds)) }
            return .success(.count(relationship: relationship))
        case .aggregate(let function, let collection, let key):
            guard function == .sum else {
                return .failure(.init("\(label): only @count and @sum are kept current in the database; @\(function.rawValue) would need every row read again on each change — fetch it with an expression instead"))
            }
            guard let relationship = toMany(collection), let destination = destinations[relationship],
                  case .inverseForeignKey = storage[relationship] else {
                return .failure(.init("\(label): @sum needs a to-many relationship of \(entity.name) stored by a foreign key (not many-to-many)"))
            }
            guard key.count == 1, let summed = destination.propertyIndex(named: key[0]),
                  let type = destination.properties[summed].attribute?.attributeType,
                  type.isInteger || type == .double || type == .float || type == .decimal else {
                return .failure(.init("\(label): @sum.\(key.joined(separator: ".")) must name a numeric attribute of \(destination.name)"))
            }
            guard !attribute.isOptional, attribute.attributeType.isInteger == type.isInteger,
                  attribute.attributeType.isInteger || attribute.attributeType == type else { return .failure(.init(aggregateNeeds)) }
            return .success(.sum(relationship: relationship, attribute: summed))
        default:
            if let problem = rowExpressionProblem(value, of: entity) {
                return .failure(.init("\(label) is derived from \"\(format)\": \(problem)"))
            }
            return .success(.expression(value))
        }
    }

    /// Why `value` cannot be a generated column of `entity`, or nil: PostgreSQL computes one
    /// from the row alone, with immutable functions, and not from another generated column.
    private static func rowExpressionProblem(_ value: PredicateValue, of entity: EntityDescription) -> String? {
        switch value {
        case .keyPath(let path):
            guard path.count == 1, let index = entity.propertyIndex(named: path[0]),
                  let attribute = entity.properties[index].attribute else {
                return "\(path.joined(separator: ".")) is not an attribute of \(entity.name) (a derivation reads the row's own attributes, or aggregates a to-many relationship with @count or @sum)"
            }
            return attribute.derivationExpression == nil ? nil : "\(attribute.name) is derived itself"
        case .constant:
            return nil
        case .arithmetic(_, let left, let right):
            return rowExpressionProblem(left, of: entity) ?? rowExpressionProblem(right, of: entity)
        case .negated(let inner):
            return rowExpressionProblem(inner, of: entity)
        case .now:
            return "now() changes while the row does not; set the attribute in willSave() instead"
        default:
            return "only the row's attributes, constants and arithmetic can be derived here"
        }
    }
}

/// A derivation the model cannot keep (``Derivation/resolve(_:of:storage:destinations:)``).
struct DerivationProblem: Error {
    var description: String
    init(_ description: String) { self.description = description }
}
