import Foundation
import Hummingbird
import PostgresClient
import PostgresDataTesting
import TodoServer

// todo-server: the example server. DATABASE_URL names the database (its migrations are
// applied at start-up); without it, a throwaway PostgreSQL is started for the run. HOST,
// PORT and MIGRATIONS_PATH say where it listens and where the migrations are (by default the
// repository's migrations/). SIGTERM or SIGINT shut it down gracefully.
let environment = ProcessInfo.processInfo.environment
let database: Configuration
if let configured = try Configuration.fromEnvironment() {
    database = configured
} else {
    print("todo-server: no DATABASE_URL; starting a throwaway PostgreSQL (its data goes when the server stops)")
    database = try await TestDatabase.fresh(prefix: "todo_server")
}
let migrations = environment["MIGRATIONS_PATH"]
    ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../../migrations").standardized.path
let port = Int(environment["PORT"] ?? "") ?? 8080
let app = try await buildApplication(TodoServerConfiguration(
    database: database, migrationsPath: migrations, host: environment["HOST"] ?? "127.0.0.1", port: port))
print("todo-server: listening on http://\(environment["HOST"] ?? "127.0.0.1"):\(port) — try curl localhost:\(port)/items")
try await app.runService()
