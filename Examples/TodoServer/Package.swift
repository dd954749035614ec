// swift-tools-version: 6.1
import PackageDescription

// An example server on PostgresData: Hummingbird 2, the to-do model of the repository's
// migrations/, a context per request. A package of its own, so that users of the library
// never build Hummingbird.
let package = Package(
    name: "TodoServer",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "todo-server", targets: ["todo-server"]),
    ],
    dependencies: [
        .package(name: "PostgresData", path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        // Only for the test that declares entities in a file importing PostgresNIO.
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
    ],
    targets: [
        .target(
            name: "TodoServer",
            dependencies: [
                .product(name: "PostgresData", package: "PostgresData"),
                .product(name: "PostgresDataLifecycle", package: "PostgresData"),
                .product(name: "PostgresMigrations", package: "PostgresData"),
                .product(name: "TodoExample", package: "PostgresData"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "todo-server",
            dependencies: ["TodoServer", .product(name: "Hummingbird", package: "hummingbird"),
                           .product(name: "PostgresClient", package: "PostgresData"),
                           .product(name: "PostgresDataTesting", package: "PostgresData")]
        ),
        .testTarget(
            name: "TodoServerTests",
            dependencies: [
                "TodoServer",
                .product(name: "PostgresData", package: "PostgresData"),
                .product(name: "PostgresDataTesting", package: "PostgresData"),
                .product(name: "TodoExample", package: "PostgresData"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ]
        ),
        .testTarget(
            name: "PostgresNIOCoexistenceTests",
            dependencies: [
                .product(name: "PostgresData", package: "PostgresData"),
                .product(name: "PostgresDataTesting", package: "PostgresData"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
