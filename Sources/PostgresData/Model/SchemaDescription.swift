/// A database schema as data: tables with their columns, constraints and indexes.
///
/// ``ManagedObjectModel/schemaDescription`` gives the schema a model expects, and the
/// migration tool reads the same shape from a live database, so the two can be compared
/// (`postgres-data diff`). It is `Codable`: `postgres-data diff --model model.json` reads a
/// model's schema exported with ``ManagedObjectModel/schemaJSON()``.
public struct SchemaDescription: Sendable, Hashable, Codable {
    /// One table.
    public struct Table: Sendable, Hashable, Codable {
        /// The table's name.
        public var name: String
        /// The columns, in order.
        public var columns: [Column]
        /// Named constraints: primary key, unique, check, foreign keys.
        public var constraints: [Constraint]
        /// Indexes that do not belong to a constraint.
        public var indexes: [Index]
        /// Triggers on the table (those that keep derived attributes current).
        public var triggers: [Trigger]

        /// A table.
        public init(name: String, columns: [Column] = [], constraints: [Constraint] = [], indexes: [Index] = [],
                    triggers: [Trigger] = []) {
            self.name = name
            self.columns = columns
            self.constraints = constraints
            self.indexes = indexes
            self.triggers = triggers
        }

        private enum CodingKeys: String, CodingKey { case name, columns, constraints, indexes, triggers }

        /// Decodes a table; descriptions written before triggers were described have none.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decode(String.self, forKey: .name)
            columns = try container.decode([Column].self, forKey: .columns)
            constraints = try container.decode([Constraint].self, forKey: .constraints)
            indexes = try container.decode([Index].self, forKey: .indexes)
            triggers = try container.decodeIfPresent([Trigger].self, forKey: .triggers) ?? []
        }
    }

    /// A trigger with the statements that create it and its function.
    public struct Trigger: Sendable, Hashable, Codable {
        /// The trigger's name.
        public var name: String
        /// Its `CREATE TRIGGER` statement.
        public var definition: String
        /// The `CREATE OR REPLACE FUNCTION` statement of the function it runs.
        public var function: String
        /// A statement that brings existing rows up to date when the trigger is added to a
        /// populated table (a derived aggregate computed once for every row), if any.
        public var backfill: String?

        /// A trigger.
        public init(name: String, definition: String, function: String, backfill: String? = nil) {
            self.name = name
            self.definition = definition
            self.function = function
            self.backfill = backfill
        }
    }

    /// One column.
    public struct Column: Sendable, Hashable, Codable {
        /// The column's name.
        public var name: String
        /// The type as PostgreSQL's `format_type` writes it (`bigint`, `timestamp with time zone`).
        public var type: String
        /// False for `NOT NULL`.
        public var isNullable: Bool
        /// The default as SQL, when there is one.
        public var defaultExpression: String?
        /// `GENERATED … AS IDENTITY`.
        public var isIdentity: Bool
        /// The expression of a `GENERATED ALWAYS AS (…) STORED` column (a derived attribute).
        public var generationExpression: String?

        /// A column.
        public init(name: String, type: String, isNullable: Bool, defaultExpression: String? = nil, isIdentity: Bool = false,
                    generationExpression: String? = nil) {
            self.name = name
            self.type = type
            self.isNullable = isNullable
            self.defaultExpression = defaultExpression
            self.isIdentity = isIdentity
            self.generationExpression = generationExpression
        }
    }

    /// A named constraint with its definition as `ALTER TABLE … ADD CONSTRAINT name` takes it
    /// (`CHECK (weight >= 0)`, `FOREIGN KEY (list_id) REFERENCES todo_list (id) …`).
    public struct Constraint: Sendable, Hashable, Codable {
        /// The kind of constraint (`pg_constraint.contype`).
        public enum Kind: String, Sendable, Hashable, Codable {
            case primaryKey = "primary key", unique, check, foreignKey = "foreign key", exclusion
        }

        /// The constraint's name.
        public var name: String
        /// Its kind.
        public var kind: Kind
        /// What follows the name in `ADD CONSTRAINT name …`.
        public var definition: String

        /// A constraint.
        public init(name: String, kind: Kind, definition: String) {
            self.name = name
            self.kind = kind
            self.definition = definition
        }
    }

    /// An index with the statement that creates it.
    public struct Index: Sendable, Hashable, Codable {
        /// The index's name.
        public var name: String
        /// Its `CREATE INDEX` statement.
        public var definition: String

        /// An index.
        public init(name: String, definition: String) {
            self.name = name
            self.definition = definition
        }
    }

    /// The tables, in creation order (a table before those whose foreign keys refer to it
    /// does not matter: foreign keys are added after all tables).
    public var tables: [Table]

    /// A schema of these tables.
    public init(tables: [Table]) {
        self.tables = tables
    }

    /// The table named `name`.
    public func table(named name: String) -> Table? {
        tables.first { $0.name == name }
    }
}
