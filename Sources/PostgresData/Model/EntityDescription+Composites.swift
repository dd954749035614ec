extension EntityDescription {
    /// `properties` with each composite attribute replaced by its elements (`address.city`,
    /// column `address_city`; all optional when the composite is), and where they went.
    static func flatteningComposites(_ properties: [PropertyDescription])
        -> ([PropertyDescription], [(name: String, description: AttributeDescription, indices: [Int])]) {
        var result: [PropertyDescription] = []
        var composites: [(name: String, description: AttributeDescription, indices: [Int])] = []
        for property in properties {
            guard case .attribute(let attribute) = property, let elements = attribute.compositeElements else {
                result.append(property)
                continue
            }
            var indices: [Int] = []
            for element in elements {
                var flat = element
                flat.name = "\(attribute.name).\(element.name)"
                flat.columnName = SchemaNaming.identifier(attribute.columnName, element.columnName)
                if attribute.isOptional { flat.isOptional = true }
                indices.append(result.count)
                result.append(.attribute(flat))
            }
            composites.append((attribute.name, attribute, indices))
        }
        return (result, composites)
    }

    /// The element `element` of the composite attribute `composite`, as a property.
    func compositeElement(_ composite: String, _ element: String) -> AttributeDescription? {
        propertyIndex(named: "\(composite).\(element)").flatMap { properties[$0].attribute }
    }

    /// The element indices of the composite attribute called `name`, in order.
    func compositeIndices(named name: String) -> [Int]? {
        composites.first { $0.name == name }?.indices
    }
}
