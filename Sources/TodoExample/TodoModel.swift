import Foundation
import PostgresData

// The example app of the demo and of the migration tool's tests: the seeds' to-do items and
// lists, people, teams and players, and weighted choices. Its schema is what `migrations/`
// builds; `postgres-data diff` against a migrated database is empty.

/// A to-do item (table `items`).
@Entity(tableName: "items")
public final class TodoItem: ManagedObject {
    @Attribute(minLength: 1, maxLength: 200) public var name: String
    @Attribute(.indexed) public var createdAt: Date
    public var done = false
    @Attribute(minValue: 0) public var weight: Int32 = 0
    public var list: TodoList?
}

/// A list of items; deleting it deletes its items.
@Entity(tableName: "todo_lists")
public final class TodoList: ManagedObject {
    public var title: String
    @Relationship(deleteRule: .cascade, inverse: \TodoItem.list) public var items: Set<TodoItem>
    public var owner: Person?
}

/// Someone who owns lists.
@Entity
public final class Person: ManagedObject {
    public var name: String
    @Attribute(minValue: 0) public var age: Int32 = 0
    @Relationship(deleteRule: .nullify, inverse: \TodoList.owner) public var lists: Set<TodoList>
}

/// A team; deleting it deletes its players.
@Entity
public final class Team: ManagedObject {
    @Attribute(.unique) public var name: String
    @Relationship(deleteRule: .cascade, inverse: \Player.team) public var players: Set<Player>
}

/// A player of a team.
@Entity
public final class Player: ManagedObject {
    public var name: String
    public var score: Int32 = 0
    public var team: Team?
}

/// One option of a weighted choice.
@Entity
public final class Choice: ManagedObject {
    public var name: String
    @Attribute(minValue: 0) public var weight: Int32 = 0
}

/// The example app's model.
public let todoModel = ManagedObjectModel(TodoItem.self, TodoList.self, Person.self, Team.self, Player.self, Choice.self)
