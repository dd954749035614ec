import Foundation

/// Keeps tests that allocate a lot apart from tests that measure the process's resident
/// memory.
///
/// Test suites run in parallel in one process, so a test that holds a million objects would
/// show up in another test's measurement of resident memory. Tests that measure memory, or
/// hold hundreds of megabytes, wrap their body in ``exclusively(_:)``: one at a time, alone
/// among the tests that use this type. Tests that allocate steadily without measuring (stress
/// runs, enormous values) wrap theirs in ``sharingWithOthers(_:)``: together, but never
/// while an exclusive one runs. Other tests are not held back.
public enum MemoryIntensiveTests {
    /// A readers-writer gate served in arrival order, so that neither kind waits forever.
    private actor Gate {
        private var exclusive = false
        private var sharing = 0
        private var waiting: [(exclusive: Bool, continuation: CheckedContinuation<Void, Never>)] = []

        func enter(exclusive wantsExclusive: Bool) async {
            if waiting.isEmpty && admits(wantsExclusive) {
                admit(wantsExclusive)
                return
            }
            await withCheckedContinuation { waiting.append((wantsExclusive, $0)) }
        }

        func leave(exclusive wasExclusive: Bool) {
            if wasExclusive { exclusive = false } else { sharing -= 1 }
            while let first = waiting.first, admits(first.exclusive) {
                waiting.removeFirst()
                admit(first.exclusive)
                first.continuation.resume()
            }
        }

        private func admits(_ wantsExclusive: Bool) -> Bool {
            wantsExclusive ? !exclusive && sharing == 0 : !exclusive
        }

        private func admit(_ wantsExclusive: Bool) {
            if wantsExclusive { exclusive = true } else { sharing += 1 }
        }
    }

    private static let gate = Gate()

    /// False in a build with AddressSanitizer (whose quarantine keeps freed memory resident) or
    /// ThreadSanitizer (whose shadow memory grows with what the program touches): tests that
    /// measure resident memory are enabled only when it means something.
    public static let residentMemoryIsMeaningful: Bool =
        dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__asan_init") == nil
        && dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__tsan_init") == nil

    /// Runs `body` while no other test of this type runs.
    public static func exclusively<T>(_ body: () async throws -> T) async throws -> T {
        try await passing(exclusive: true, body)
    }

    /// Runs `body` alongside other sharing tests, never during an exclusive one.
    public static func sharingWithOthers<T>(_ body: () async throws -> T) async throws -> T {
        try await passing(exclusive: false, body)
    }

    private static func passing<T>(exclusive: Bool, _ body: () async throws -> T) async throws -> T {
        await gate.enter(exclusive: exclusive)
        do {
            let result = try await body()
            await gate.leave(exclusive: exclusive)
            return result
        } catch {
            await gate.leave(exclusive: exclusive)
            throw error
        }
    }
}
