/// The writable columns of an entity as a batch insert's `COPY` writes them: their
/// properties, their types, and what lets a value in without the model's full check.
struct BatchInsertColumns {
    /// The properties of the columns (`EntityDescription/writableColumnIndices`).
    let indices: [Int]
    let types: [AttributeType]
    /// Per column: its attribute's optionality and type, and whether it has rules beyond
    /// them (nil for a relationship).
    private let checks: [(isOptional: Bool, type: AttributeType, hasRules: Bool)?]

    init(_ entity: EntityDescription) {
        indices = entity.writableColumnIndices
        types = indices.map { SavePlan.columnType(entity, $0) }
        checks = indices.map { index in
            entity.properties[index].attribute.map { (isOptional: $0.isOptional, type: $0.attributeType, hasRules: $0.hasValueRules) }
        }
    }

    /// True when `value` goes into the column at `position` as it is: an attribute without
    /// rules beyond its type, given a value of that type and in its range, or nil where it is
    /// optional. Anything else is converted or checked against the model first.
    func admits(_ value: AttributeValue, at position: Int) -> Bool {
        guard let check = checks[position], !check.hasRules else { return false }
        return value.isNull ? check.isOptional : value.fits(check.type) && value.isInRange(of: check.type)
    }
}
