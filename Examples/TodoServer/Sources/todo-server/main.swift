import Foundation
import Hummingbird
import PostgresClient
import TodoServer

// todo-server: the example server. DATABASE_URL names the database (its migrations are
// applied at start-up); HOST, PORT and MIGRATIONS_PATH say where it listens and where the
// migrations are (by default the repository's migrations/). SIGTERM or SIGINT shut it down
// gracefully.
let environment = ProcessInfo.processInfo.environment
guard let database = try Configuration.fromEnvironment() else {
    print("todo-server: set DATABASE_URL (postgres://user@host/database)")
    exit(2)
}
let migrations = environment["MIGRATIONS_PATH"]
    ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../../migrations").standardized.path
let app = try await buildApplication(TodoServerConfiguration(
    database: database, migrationsPath: migrations,
    host: environment["HOST"] ?? "127.0.0.1", port: Int(environment["PORT"] ?? "") ?? 8080))
try await app.runService()
