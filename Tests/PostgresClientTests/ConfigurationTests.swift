import CLibPQ
import Foundation
import PostgresClient
import Testing

@Suite("Connection URLs and keywords: parsed exactly, errors precise, passwords never shown")
struct ConfigurationTests {
    @Test func fullURL() throws {
        let configuration = try Configuration(url: "postgresql://app%40corp:s%3Ecret@db.example.com:6432/todo%20list?sslmode=require&application_name=api")
        #expect(configuration.user == "app@corp")
        #expect(configuration.password == "s>cret")
        #expect(configuration.host == "db.example.com")
        #expect(configuration.port == 6432)
        #expect(configuration.database == "todo list")
        #expect(configuration["sslmode"] == "require")
        #expect(configuration["application_name"] == "api")
        #expect(!configuration.description.contains("s>cret") && !configuration.description.contains("s%3Ecret"))
        #expect(configuration.description.contains("***"))
    }

    @Test func unixSocketHostsAndIPv6AndSeveralHosts() throws {
        #expect(try Configuration(url: "postgres://%2Fvar%2Frun%2Fpostgresql/todo").host == "/var/run/postgresql")
        #expect(try Configuration(url: "postgres:///todo?host=/tmp&port=5433").host == "/tmp")
        let ipv6 = try Configuration(url: "postgres://user@[::1]:5433/db")
        #expect(ipv6.host == "::1")
        #expect(ipv6.port == 5433)
        let many = try Configuration(url: "postgres://a.example:5432,b.example:5433/db?target_session_attrs=read-write")
        #expect(many.host == "a.example,b.example")
        #expect(many["port"] == "5432,5433")
        #expect(try Configuration(url: "postgres://localhost/db?ssl=true")["sslmode"] == "require")
    }

    @Test(arguments: [
        ("localhost/db", "must start with postgres://"),
        ("mysql://localhost/db", "unsupported scheme"),
        ("postgres://host:99999/db", "invalid port"),
        ("postgres://host:abc/db", "invalid port"),
        ("postgres://[::1/db", "closing \"]\""),
        ("postgres://host/db?sslmode", "has no value"),
        ("postgres://host/db%zz", "malformed percent-encoding"),
        ("postgres://host/db?sslmod=require", "unknown connection option \"sslmod\""),
    ])
    func malformedURLsAreRejectedWithTheReason(url: String, reason: String) {
        #expect {
            try Configuration(url: url)
        } throws: { error in
            guard let error = error as? PostgresError else { return false }
            return error.kind == .invalidConfiguration && error.description.contains(reason)
        }
    }

    @Test func malformedURLErrorsHideThePassword() {
        for url in ["postgres://me:hunter2secret@host:notaport/db", "postgres://me:hunter2secret@host/db?bogus=1",
                    "postgres://me:hunter2%zzsecret@host/db", "postgres://me@host:bad/db?password=hunter2secret&sslmode",
                    "postgres://me@host/db?password=hunter2secret&sslmode"] {
            do {
                _ = try Configuration(url: url)
                Issue.record("\(url) was accepted")
            } catch {
                #expect(!"\(error)".contains("hunter2"), "\(error)")
            }
        }
    }

    @Test func unknownKeywordSuggestsTheRightOne() {
        #expect {
            try Configuration(keywords: ["host": "localhost", "dbnme": "x"])
        } throws: { error in
            "\(error)".contains("\"dbnme\"") && "\(error)".contains("dbname")
        }
    }

    @Test func refusedConnectionIsAClearErrorWithoutThePassword() async throws {
        // Port 1 on loopback: privileged, and nothing listens there.
        let error = await capturePostgresError {
            _ = try await Connection.connect(url: "postgres://me:topsecretpw@127.0.0.1:1/db?connect_timeout=5")
        }
        #expect(error?.kind == .connectionFailed)
        #expect(error?.message.contains("refused") == true)
        #expect(error?.hint?.contains("Is the server running") == true)
        #expect(!"\(String(describing: error))".contains("topsecretpw"))
    }

    @Test func unknownDatabaseIsNamed() async throws {
        var configuration = try await TestServer.configuration()
        configuration.database = "no_such_database_here"
        let error = await capturePostgresError { _ = try await Connection.connect(configuration) }
        #expect(error?.kind == .connectionFailed)
        #expect(error?.sqlState == .invalidCatalogName)
        #expect(error?.message.contains("no_such_database_here") == true)
    }

    @Test func connectionStringParsesBackInLibpq() throws {
        let configuration = try Configuration(keywords: ["host": "/tmp/a b", "user": "o'neil", "password": "p\\a's s", "dbname": "db"])
        var message: UnsafeMutablePointer<CChar>?
        let options = try #require(PQconninfoParse(configuration.connectionString(), &message))
        defer { PQconninfoFree(options) }
        var parsed: [String: String] = [:]
        var cursor = options
        while let keyword = cursor.pointee.keyword {
            if let value = cursor.pointee.val { parsed[String(cString: keyword)] = String(cString: value) }
            cursor += 1
        }
        #expect(parsed["host"] == "/tmp/a b")
        #expect(parsed["user"] == "o'neil")
        #expect(parsed["password"] == "p\\a's s")
        #expect(parsed["dbname"] == "db")
    }
}
