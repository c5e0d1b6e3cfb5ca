// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "dropfetch",
    products: [
        .executable(name: "dropfetch", targets: ["dropfetch"]),
        .library(name: "DropFetch", targets: ["DropFetch"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CCurl", pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(
            name: "CYaml", pkgConfig: "yaml-0.1",
            providers: [.apt(["libyaml-dev"])]),
        .systemLibrary(
            name: "CCrypto", pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CLinux"),
        .target(
            name: "DropFetch",
            dependencies: [
                "CCurl", "CYaml", "CCrypto", "CLinux",
                .product(name: "Logging", package: "swift-log"),
            ]),
        .executableTarget(
            name: "dropfetch",
            dependencies: [
                "DropFetch",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "DropFetchTests",
            dependencies: ["DropFetch", .product(name: "Logging", package: "swift-log")]),
    ]
)
