// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "PostgresData",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "PostgresClient", targets: ["PostgresClient"]),
        .library(name: "PostgresDataTesting", targets: ["PostgresDataTesting"]),
        .executable(name: "postgres-data-demo", targets: ["postgres-data-demo"]),
        .executable(name: "postgres-data-bench", targets: ["postgres-data-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
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
            ]
        ),
        .target(
            name: "PostgresDataTesting",
            dependencies: ["PostgresClient", "CLibPQ"]
        ),
        .executableTarget(
            name: "postgres-data-demo",
            dependencies: ["PostgresClient", "PostgresDataTesting"]
        ),
        .executableTarget(
            name: "postgres-data-bench",
            dependencies: ["PostgresClient", "PostgresDataTesting", "CLibPQ"]
        ),
        .testTarget(
            name: "PostgresClientTests",
            dependencies: ["PostgresClient", "PostgresDataTesting", "CLibPQ"]
        ),
        .testTarget(
            name: "PostgresDataTestingTests",
            dependencies: ["PostgresDataTesting", "PostgresClient"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
