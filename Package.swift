// swift-tools-version: 6.1
import CompilerPluginSupport
import PackageDescription

let package = Package(
    name: "PostgresData",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "PostgresClient", targets: ["PostgresClient"]),
        .library(name: "PostgresData", targets: ["PostgresData"]),
        .library(name: "PostgresMigrations", targets: ["PostgresMigrations"]),
        .library(name: "PostgresDataTesting", targets: ["PostgresDataTesting"]),
        .library(name: "PostgresDataLifecycle", targets: ["PostgresDataLifecycle"]),
        // The example app's model (the schema of migrations/), for the packages under Examples/.
        .library(name: "TodoExample", targets: ["TodoExample"]),
        .executable(name: "postgres-data", targets: ["postgres-data"]),
        .executable(name: "postgres-data-demo", targets: ["postgres-data-demo"]),
        .executable(name: "postgres-data-bench", targets: ["postgres-data-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/swiftlang/swift-syntax.git", from: "603.0.1"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
    ],
    targets: [
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"]), .brew(["libpq"])]
        ),
        .target(
            name: "PostgresClient",
            dependencies: [
                "CLibPQ",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]
        ),
        .macro(
            name: "PostgresDataMacros",
            dependencies: [
                .product(name: "SwiftSyntax", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
            ]
        ),
        .target(
            name: "PostgresData",
            dependencies: [
                "PostgresClient",
                "CLibPQ",
                "PostgresDataMacros",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "OrderedCollections", package: "swift-collections"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        .target(
            name: "PostgresMigrations",
            dependencies: ["PostgresClient", "PostgresData", .product(name: "Logging", package: "swift-log"),
                           .product(name: "Tracing", package: "swift-distributed-tracing")]
        ),
        .executableTarget(
            name: "postgres-data",
            dependencies: [
                "PostgresMigrations", "PostgresClient", "PostgresData",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .target(
            name: "TodoExample",
            dependencies: ["PostgresData"]
        ),
        .target(
            name: "PostgresDataTesting",
            dependencies: ["PostgresClient", "CLibPQ"]
        ),
        .target(
            name: "StressWorkload",
            dependencies: ["PostgresData", "PostgresClient", "PostgresDataTesting", "PostgresMigrations"]
        ),
        .executableTarget(
            name: "postgres-data-stress",
            dependencies: ["StressWorkload", "PostgresData", "PostgresClient"]
        ),
        .executableTarget(
            name: "postgres-data-demo",
            dependencies: ["PostgresData", "PostgresClient", "PostgresDataTesting", "TodoExample",
                           .product(name: "Logging", package: "swift-log")]
        ),
        .executableTarget(
            name: "postgres-data-bench",
            dependencies: ["PostgresData", "PostgresClient", "PostgresDataTesting", "CLibPQ", "BenchmarkFloorObjects",
                           .product(name: "Logging", package: "swift-log")]
        ),
        // The benchmark floors' objects read from another module, as a library's objects are.
        .target(name: "BenchmarkFloorObjects"),
        .testTarget(
            name: "PostgresClientTests",
            dependencies: ["PostgresClient", "PostgresDataTesting", "CLibPQ"]
        ),
        .testTarget(
            name: "PostgresDataTests",
            dependencies: ["PostgresData", "PostgresClient", "PostgresDataTesting"]
        ),
        .testTarget(
            name: "PostgresMigrationsTests",
            dependencies: ["PostgresMigrations", "PostgresData", "PostgresClient", "PostgresDataTesting", "TodoExample"]
        ),
        .testTarget(
            name: "PostgresDataMacrosTests",
            dependencies: [
                "PostgresDataMacros",
                .product(name: "SwiftSyntaxMacrosTestSupport", package: "swift-syntax"),
            ]
        ),
        .testTarget(
            name: "ReliabilityTests",
            dependencies: ["StressWorkload", "PostgresData", "PostgresClient", "PostgresMigrations", "PostgresDataTesting"]
        ),
        // The store as a swift-service-lifecycle Service: a module of its own, so that the
        // library itself does not depend on ServiceLifecycle.
        .target(
            name: "PostgresDataLifecycle",
            dependencies: ["PostgresData", .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")]
        ),
        .testTarget(
            name: "PostgresDataLifecycleTests",
            dependencies: ["PostgresDataLifecycle", "PostgresData", "PostgresClient", "PostgresDataTesting",
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")]
        ),
        // Entities in a module where another type is named PostgresData, as PostgresNIO's is:
        // it compiles, or the macro's expansion names the module.
        .testTarget(
            name: "CoexistenceTests",
            dependencies: ["PostgresData"]
        ),
        // Metrics, spans and logs read back through the ecosystem's test backends.
        .testTarget(
            name: "ObservabilityTests",
            dependencies: ["PostgresData", "PostgresClient", "PostgresMigrations", "PostgresDataTesting",
                           .product(name: "MetricsTestKit", package: "swift-metrics"),
                           .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                           .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "PostgresDataTestingTests",
            dependencies: ["PostgresDataTesting", "PostgresClient"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
