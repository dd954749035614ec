import Foundation

/// Runs tests that allocate hundreds of megabytes, or measure the process's resident
/// memory, one at a time.
///
/// Test suites run in parallel in one process, so a test that holds a million objects would
/// show up in another test's measurement of resident memory. Both kinds wrap their body in
/// ``exclusively(_:)``; other tests are not held back.
public enum MemoryIntensiveTests {
    private actor Gate {
        private var busy = false
        private var waiting: [CheckedContinuation<Void, Never>] = []

        func enter() async {
            if !busy {
                busy = true
                return
            }
            await withCheckedContinuation { waiting.append($0) }
        }

        func leave() {
            if waiting.isEmpty {
                busy = false
            } else {
                waiting.removeFirst().resume()
            }
        }
    }

    private static let gate = Gate()

    /// False in a build with AddressSanitizer, whose quarantine keeps freed memory resident:
    /// tests that measure resident memory are enabled only when it means something.
    public static let residentMemoryIsMeaningful: Bool = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__asan_init") == nil

    /// Runs `body` while no other memory-intensive test runs.
    public static func exclusively<T>(_ body: () async throws -> T) async throws -> T {
        await gate.enter()
        do {
            let result = try await body()
            await gate.leave()
            return result
        } catch {
            await gate.leave()
            throw error
        }
    }
}
