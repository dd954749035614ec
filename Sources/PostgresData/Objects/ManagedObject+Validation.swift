import PostgresClient

/// Per-key validation: the model's rules for one value, then the class's own rule for that
/// key, written in Swift.
///
/// An `@Entity` class gives a key a rule of its own with a method named `validate` + the
/// key's name capitalised, taking the value `inout` (Core Data's `validate<Key>:error:`):
///
/// ```swift
/// @Entity final class Account: ManagedObject {
///     var code = ""
///     func validateCode(_ value: inout String) throws {
///         guard value.allSatisfy(\.isLetter) else { throw ValidationError("letters only") }
///     }
/// }
/// ```
///
/// A save runs every such rule with the model's (``validateForInsert()`` and
/// ``validateForUpdate()``), and throws the failures of every object and key together
/// (``PostgresDataError/validation(_:)``). A rule may replace the value it is given; in a
/// save the replacement is not kept (validation changes nothing, as in Core Data), through
/// ``validateValue(_:forKey:)`` the caller gets it back.
extension ManagedObject {
    /// Checks `value` as a value of the property `key`: the model's rules (type,
    /// optionality, range, length, pattern), then the class's `validate<Key>` rule, which
    /// may replace `value`.
    ///
    /// Core Data equivalent: `validateValue(_:forKey:)`. Throws
    /// ``PostgresDataError/validation(_:)`` with the failures, or
    /// ``PostgresDataError/unknownKey(_:entity:known:)`` for a key the entity does not have.
    /// Relationships have no value rules here; their counts are checked when saving.
    public func validateValue(_ value: inout AttributeValue, forKey key: String) throws {
        guard let index = entity.propertyIndex(named: key) else {
            throw PostgresDataError.unknownKey(key, entity: entity.name, known: entity.properties.map(\.name))
        }
        guard case .attribute(let attribute) = entity.properties[index] else { return }
        var reasons = attribute.violations(of: value)
        if reasons.isEmpty, let rule = entity.attributeRules.first(where: { $0.index == index })?.rule, !rule.predicates.isEmpty {
            // The predicates read the object: the candidate value stands in for a moment.
            willAccessValues()
            let current = values[index]
            values[index] = value
            reasons = predicateViolations(rule, at: index)
            values[index] = current
        }
        let failures = reasons.map { ValidationFailure(objectID: objectID, key: key, reason: $0) }
        if !failures.isEmpty { throw PostgresDataError.validation(failures) }
        do {
            try _$validate(key, &value)
        } catch {
            throw PostgresDataError.validation(validationFailures(from: error, key: key))
        }
    }

    /// The failures the class's own rules find in the current values (the values are not
    /// changed); keys whose model rules failed already are skipped.
    func customValidationFailures(skipping failed: Set<String>) -> [ValidationFailure] {
        var failures: [ValidationFailure] = []
        for key in Self.validatedKeys(of: type(of: self)) where !failed.contains(key) {
            guard let index = entity.propertyIndex(named: key), case .attribute = entity.properties[index] else { continue }
            var value = values[index]
            do { try _$validate(key, &value) } catch { failures += validationFailures(from: error, key: key) }
        }
        return failures
    }

    /// The reasons the value at `index` breaks its attribute's validation predicates (none
    /// for nil: optionality is the model's other rule).
    func predicateViolations(_ rule: AttributeRule, at index: Int) -> [String] {
        guard !rule.predicates.isEmpty, !values[index].isNull else { return [] }
        var reasons: [String] = []
        for (format, parsed) in rule.predicates {
            switch parsed {
            case .failure(let error):
                reasons.append("has a validation predicate that does not parse (\(format)): \(error)")
            case .success(let node):
                var evaluator = PredicateEvaluator()
                do {
                    if try !evaluator.evaluate(node, on: self) { reasons.append("does not satisfy \(format)") }
                } catch {
                    reasons.append("cannot be checked against \(format): \(error)")
                }
            }
        }
        return reasons
    }

    private static func validatedKeys(of type: ManagedObject.Type) -> [String] { type._$validatedKeys }

    /// A rule's error as failures: its own list when it threw ``PostgresDataError/validation(_:)``,
    /// else one failure with the error's description.
    private func validationFailures(from error: any Error, key: String) -> [ValidationFailure] {
        if case PostgresDataError.validation(let failures) = error { return failures }
        return [ValidationFailure(objectID: objectID, key: key, reason: "\(error)")]
    }

    /// Runs `rule` on `value` converted to the property's type, and stores back what the
    /// rule leaves (the `@Entity` macro's `validate<Key>` dispatch).
    public final func _$validate<Value: PersistentAttributeValue>(_ value: inout AttributeValue, as type: Value.Type,
                                                                  with rule: (inout Value) throws -> Void) throws {
        guard value.fits(Value.attributeType) || (value.isNull && Value.isOptionalAttribute) else { return }
        var typed = Value(attributeValue: value)
        try rule(&typed)
        value = typed.attributeValue
    }
}
