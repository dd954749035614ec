import Foundation
import PostgresClient
import PostgresData
import PostgresDataTesting
import Testing

/// Every hook a journal receives, in order (the suite runs its tests one at a time).
let journalEvents = Locked<[String]>([])

@Entity final class Journal: ManagedObject {
    var title: String = ""
    var slug: String = ""
    var createdAt: Date?
    @Relationship(deleteRule: .cascade, inverse: \JournalPage.journal) var pages: Set<JournalPage>

    private func log(_ event: String) { journalEvents.withLock { $0.append(event) } }

    override func awakeFromInsert() {
        super.awakeFromInsert()
        createdAt = Date(timeIntervalSince1970: 1_800_000_000)
        log("awakeFromInsert")
    }
    override func awakeFromFetch() { super.awakeFromFetch(); log("awakeFromFetch") }
    override func awake(fromSnapshotEvents events: SnapshotEventType) {
        super.awake(fromSnapshotEvents: events)
        log(events.contains(.rollback) ? "awake(rollback)" : events.contains(.refresh) ? "awake(refresh)" : "awake(mergePolicy)")
    }
    override func willSave() {
        super.willSave()
        log("willSave")
        // A change made here is saved; the hook then runs once more and changes nothing.
        if !isDeleted && slug != title.lowercased() { slug = title.lowercased() }
    }
    override func didSave() { super.didSave(); log("didSave") }
    override func prepareForDeletion() {
        super.prepareForDeletion()
        log("prepareForDeletion with \(pages.count) pages")   // before the cascade runs
    }
    override func willTurnIntoFault() { super.willTurnIntoFault(); log("willTurnIntoFault") }
    override func didTurnIntoFault() { super.didTurnIntoFault(); log("didTurnIntoFault") }
}

@Entity final class JournalPage: ManagedObject {
    var text: String = ""
    var journal: Journal?
}

/// A hook that changes its object every time: the save must stop, not loop.
@Entity final class RestlessJournal: ManagedObject {
    var counter = 0
    override func willSave() {
        super.willSave()
        counter += 1
    }
}

/// Hooks that change what a large save writes while its keys are being allocated: a
/// chapter titled "appendix" adds one, a chapter titled "draft" deletes itself.
@Entity final class Chapter: ManagedObject {
    var title: String = ""
    var number = 0
    override func willSave() {
        super.willSave()
        guard let context = managedObjectContext, isInserted else { return }
        if title == "appendix" {
            title = "appendix, split"
            let added = Chapter(context: context)
            added.title = "added by a hook"
            added.number = -1
        } else if title == "draft" {
            context.delete(self)
        } else if title == "identified" {
            do {
                try context.obtainPermanentIDs(for: [self])
                chapterKeysObtainedInHooks.withLock { $0.append(objectID.primaryKey ?? 0) }
            } catch {
                chapterKeysObtainedInHooks.withLock { $0.append(-1) }
            }
        }
    }
}

/// The keys chapters titled "identified" obtained in their will-save hook (-1: it threw).
let chapterKeysObtainedInHooks = Locked<[Int64]>([])

/// How many times each meter (by key) was awakened from a fetch.
let meterAwakenings = Locked<[Int64: Int]>([:])

@Entity final class Meter: ManagedObject {
    var value = 0
    override func awakeFromFetch() {
        super.awakeFromFetch()
        let key = objectID.primaryKey ?? 0
        meterAwakenings.withLock { $0[key, default: 0] += 1 }
    }
}

/// How many stamps were initialised, inserted or fetched.
let stampInitialisations = Locked(0)

/// A class that overrides Core Data's designated initialiser, as ported code does.
@Entity final class Stamp: ManagedObject {
    var label = ""
    required init(entity: EntityDescription, insertInto context: ManagedObjectContext?) {
        stampInitialisations.withLock { $0 += 1 }
        super.init(entity: entity, insertInto: context)
    }
}

/// A scrap whose validation deletes the inserted scraps marked to drop: validation that
/// changes the context (which it should not) must still leave the save sound.
@Entity final class Scrap: ManagedObject {
    var number = 0
    var drop = false
    override func validateForInsert() throws {
        try super.validateForInsert()
        guard let context = managedObjectContext, number == 0 else { return }
        for object in context.insertedObjects {
            if let scrap = object as? Scrap, scrap.drop { context.delete(scrap) }
        }
    }
}

@Suite(.serialized) struct LifecycleHookTests {
    func container() async throws -> PersistentContainer {
        let configuration = try await TestDatabase.fresh(prefix: "pd_lifecycle")
        let container = PersistentContainer(name: "Journals", model: ManagedObjectModel(Journal.self, JournalPage.self, RestlessJournal.self, Chapter.self, Meter.self, Stamp.self, Scrap.self))
        try await container.loadPersistentStores(configuration: configuration, options: .init(createSchemaIfMissing: true))
        return container
    }

    @Test func hooksRunInCoreDatasOrderFromInsertThroughSaveRefreshRollbackAndDelete() async throws {
        journalEvents.withLock { $0 = [] }
        let container = try await container()
        let context = container.newBackgroundContext()
        context.retainsRegisteredObjects = true  // read by ID in later blocks
        let id = try await context.perform {
            let journal = Journal(context: context)
            journal.title = "Hello"
            let page = JournalPage(context: context)
            page.journal = journal
            try await context.save()
            #expect(journal.slug == "hello", "the change made in willSave was kept")
            return journal.objectID
        }
        let key = try #require(id.primaryKey)
        #expect(try await container.rawStrings("SELECT slug FROM journal WHERE id = \(key)") == ["hello"], "and saved")
        #expect(try await container.rawIntegers("SELECT extract(epoch FROM created_at)::int8 FROM journal") == [1_800_000_000])
        #expect(journalEvents.withLock { $0 } == ["awakeFromInsert", "willSave", "willSave", "didSave"])

        journalEvents.withLock { $0 = [] }
        try await context.perform {
            let journal = try #require(context.registeredObject(for: id) as? Journal)
            context.refresh(journal, mergeChanges: false)
            #expect(journal.isFault)
            #expect(journal.title == "Hello")           // the fault fills
            journal.title = "Changed"
            context.rollback()
            #expect(journal.title == "Hello")
        }
        #expect(journalEvents.withLock { $0 } == ["willTurnIntoFault", "didTurnIntoFault", "awakeFromFetch", "awake(rollback)"])

        // A fetch that registers objects with their values awakes them too.
        journalEvents.withLock { $0 = [] }
        let other = container.newBackgroundContext()
        try await other.perform {
            var request = FetchRequest<Journal>()
            request.returnsObjectsAsFaults = false
            let fetched = try await other.fetch(request)
            #expect(fetched.count == 1)
        }
        #expect(journalEvents.withLock { $0 } == ["awakeFromFetch"])

        journalEvents.withLock { $0 = [] }
        try await context.perform {
            let journal = try #require(context.registeredObject(for: id) as? Journal)
            context.delete(journal)
            try await context.save()
        }
        #expect(journalEvents.withLock { $0 } == ["prepareForDeletion with 1 pages", "willSave", "didSave"])
        #expect(try await container.rawIntegers("SELECT count(*) FROM journal_page") == [0], "the cascade ran after the hook")
    }

    @Test func hooksOfALargeSaveMayInsertAndDeleteWhileItsKeysAreAllocated() async throws {
        let container = try await container()
        let context = container.newBackgroundContext()
        let saved = try await context.perform {
            var chapters: [Chapter] = []
            for number in 0..<800 {
                let chapter = Chapter(context: context)
                chapter.number = number
                chapter.title = number == 10 ? "draft" : number == 20 ? "appendix" : "chapter"
                chapters.append(chapter)
            }
            try context.save()
            #expect(!context.hasChanges)
            let kept = context.registeredObjects.compactMap { $0 as? Chapter }
            #expect(kept.count == 800)
            #expect(kept.allSatisfy { !$0.objectID.isTemporaryID && !$0.isInserted })
            #expect(kept.allSatisfy { context.registeredObject(for: $0.objectID) === $0 }, "found by the permanent IDs")
            #expect(chapters[10].managedObjectContext == nil && chapters[10].objectID.isTemporaryID)
            return kept.map { "\($0.objectID.primaryKey ?? 0) \($0.number) \($0.title)" }
        }
        #expect(saved.count == 800)
        let rows = try await container.rawStrings("SELECT id || ' ' || number || ' ' || title FROM chapter")
        #expect(Set(rows) == Set(saved))
        #expect(rows.contains { $0.hasSuffix(" -1 added by a hook") } && rows.contains { $0.hasSuffix(" 20 appendix, split") })
        #expect(!rows.contains { $0.hasSuffix(" draft") })
    }

    /// A will-save hook that obtains its object's permanent ID while a large save waits for
    /// its keys takes one of the keys reserved while the objects were inserted, which the save
    /// had counted on: the save still gives each other object a key, and the object keeps
    /// the one it obtained.
    @Test func aHookObtainingItsPermanentIDDuringALargeSaveLeavesEveryObjectAKey() async throws {
        let container = try await container()
        let context = container.newBackgroundContext()
        chapterKeysObtainedInHooks.withLock { $0 = [] }
        let saved = try await context.perform {
            var chapters: [Chapter] = []
            for number in 0..<5_000 {
                let chapter = Chapter(context: context)
                chapter.number = number
                chapter.title = number == 7 ? "identified" : "chapter"
                chapters.append(chapter)
            }
            // Waits for the reservation sent at the 4,096th object and takes one of its keys:
            // the save then finds the other 4,095 in hand, and counts on them.
            try context.obtainPermanentIDs(for: [chapters[0]])
            #expect(!chapters[0].objectID.isTemporaryID && chapters[1].objectID.isTemporaryID)
            try context.save()
            #expect(!context.hasChanges)
            let kept = context.registeredObjects.compactMap { $0 as? Chapter }
            #expect(kept.count == 5_000)
            #expect(kept.allSatisfy { !$0.objectID.isTemporaryID && !$0.isInserted })
            return kept.map { ($0.objectID.primaryKey ?? 0, $0.number) }
        }
        let obtained = chapterKeysObtainedInHooks.withLock { $0 }
        #expect(obtained.count == 1 && obtained[0] > 0, "the hook obtained a key: \(obtained)")
        #expect(saved.first { $0.1 == 7 }?.0 == obtained.first, "chapter 7 kept the key its hook obtained")
        #expect(Set(saved.map(\.0)).count == 5_000, "every chapter has a key of its own")
        let rows = try await container.rawStrings("SELECT id || ' ' || number FROM chapter")
        #expect(Set(rows) == Set(saved.map { "\($0.0) \($0.1)" }))
    }

    /// The first scrap's validation deletes 59 of the 100 new scraps while the save walks
    /// them (enough for the inserted set to close its holes): the walk goes on over the
    /// objects it started with, and the save writes the 41 left.
    @Test func validationThatDeletesInsertedObjectsLeavesTheSaveSound() async throws {
        let container = try await container()
        let context = container.newBackgroundContext()
        try await context.perform {
            for number in 0..<100 {
                let scrap = Scrap(context: context)
                scrap.number = number
                scrap.drop = number % 5 < 3 && number > 0
            }
            try context.save()
            #expect(!context.hasChanges)
        }
        let numbers = try await container.rawIntegers("SELECT number FROM scrap ORDER BY number")
        #expect(numbers == (0..<100).filter { !($0 % 5 < 3 && $0 > 0) }.map(Int64.init))
    }

    /// An override of `init(entity:insertInto:)` runs for every object: inserted ones and
    /// the fetched ones a fetch makes.
    @Test func anOverriddenDesignatedInitialiserRunsForInsertedAndFetchedObjects() async throws {
        let container = try await container()
        stampInitialisations.withLock { $0 = 0 }
        let writer = container.newBackgroundContext()
        try await writer.perform {
            for label in ["a", "b", "c"] { Stamp(context: writer).label = label }
            try writer.save()
        }
        #expect(stampInitialisations.withLock { $0 } == 3)
        let reader = container.newBackgroundContext()
        let labels = try await reader.perform {
            var request = FetchRequest<Stamp>(sortDescriptors: [FetchSortDescriptor(key: "label")])
            request.returnsObjectsAsFaults = false
            return try reader.fetch(request).map(\.label)
        }
        #expect(labels == ["a", "b", "c"])
        #expect(stampInitialisations.withLock { $0 } == 6)
    }

    /// The save announces its objects before the will-save hooks run and again after; an
    /// observer that inserts an object each time it hears of one adds "second" then "third".
    /// The hooks change nothing, yet the save lists its objects again, and each of the three
    /// is written and told didSave.
    @Test func objectsAnObserverInsertsWhileTheHooksRunAreSavedAndToldSo() async throws {
        let container = try await container()
        let context = container.newBackgroundContext()
        journalEvents.withLock { $0 = [] }
        try await context.perform {
            let first = Journal(context: context)
            first.title = "first"
            first.slug = "first"
            let next = ["first": "second", "second": "third"]
            let observer = NotificationCenter.default.addObserver(
                forName: ManagedObjectContext.objectsDidChangeNotification, object: context, queue: nil) { note in
                guard let changes = note.userInfo?["changes"] as? ContextObjectsDidChange else { return }
                for id in changes.insertedObjectIDs {
                    guard let heard = context.registeredObject(for: id) as? Journal, let title = next[heard.title] else { continue }
                    let added = Journal(context: context)
                    added.title = title
                    added.slug = title
                }
            }
            defer { NotificationCenter.default.removeObserver(observer) }
            try context.save()
            #expect(!context.hasChanges)
        }
        let rows = try await container.rawStrings("SELECT title FROM journal ORDER BY id")
        #expect(rows == ["first", "second", "third"])
        let events = journalEvents.withLock { $0 }
        #expect(events.filter { $0 == "didSave" }.count == 3, "\(events)")
    }

    @Test func aFetchReadInSeveralBatchesAwakesEachObjectItFillsOnce() async throws {
        let container = try await container()
        try await container.rawExecute("INSERT INTO meter (value) SELECT n * 3 FROM generate_series(1, 12000) AS n")
        meterAwakenings.withLock { $0 = [:] }
        let context = container.newBackgroundContext()
        try await context.perform {
            var first = FetchRequest<Meter>(predicate: try FetchPredicate(format: "value <= 30"), sortDescriptors: [FetchSortDescriptor(key: "value")])
            first.returnsObjectsAsFaults = false
            let early = try context.fetch(first)
            #expect(early.count == 10)
            // More rows than one batch of a streamed fetch: objects already filled are not
            // awakened again, every other one once, whichever batch it came in.
            var all = FetchRequest<Meter>(sortDescriptors: [FetchSortDescriptor(key: "value")])
            all.returnsObjectsAsFaults = false
            let samples = try context.fetch(all)
            #expect(samples.count == 12_000)
            #expect(zip(early, samples).allSatisfy { $0 === $1 })
            #expect(samples.enumerated().allSatisfy { index, sample in sample.value == (index + 1) * 3 && !sample.isFault })
            #expect(Set(samples.map(ObjectIdentifier.init)).count == 12_000)
        }
        let awakenings = meterAwakenings.withLock { $0 }
        #expect(awakenings.count == 12_000)
        #expect(awakenings.values.allSatisfy { $0 == 1 })
    }

    @Test func aWillSaveThatNeverSettlesFailsTheSaveAndWritesNothing() async throws {
        let container = try await container()
        let context = container.newBackgroundContext()
        let error = await #expect(throws: PostgresDataError.self) {
            try await context.perform {
                let restless = RestlessJournal(context: context)
                restless.counter = 0
                try await context.save()
            }
        }
        #expect("\(String(describing: error))".contains("willSave() kept changing objects"))
        #expect(try await container.rawIntegers("SELECT count(*) FROM restless_journal") == [0])
    }
}
