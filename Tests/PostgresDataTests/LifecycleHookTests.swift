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

@Suite(.serialized) struct LifecycleHookTests {
    func container() async throws -> PersistentContainer {
        let configuration = try await TestDatabase.fresh(prefix: "pd_lifecycle")
        let container = PersistentContainer(name: "Journals", model: ManagedObjectModel(Journal.self, JournalPage.self, RestlessJournal.self))
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
