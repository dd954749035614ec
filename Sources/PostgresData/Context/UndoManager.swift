/// Records changes as groups of actions to undo and redo: what a context's
/// ``ManagedObjectContext/undoManager`` registers its changes with.
///
/// Core Data equivalent: Foundation's `UndoManager`, which swift-corelibs-foundation does not
/// provide on Linux; this one has its API (the members a context and an app use), so code
/// written for Core Data reads the same:
///
/// ```swift
/// context.undoManager = UndoManager()
/// item.name = "Renamed"
/// context.processPendingChanges()      // the end of an event closes its undo group
/// context.undo()                       // item.name is back
/// ```
///
/// Not thread-safe: use it on the queue of the context it belongs to, as Foundation's.
/// Contexts group their changes by event (a `perform` block, or
/// ``ManagedObjectContext/processPendingChanges()``); call ``beginUndoGrouping()`` and
/// ``endUndoGrouping()`` to make larger groups.
public final class UndoManager {
    private struct Action {
        let target: ObjectIdentifier
        let run: () -> Void
    }

    private struct Group {
        var actions: [Action] = []
        var name = ""
    }

    private var undoStack: [Group] = []
    private var redoStack: [Group] = []
    /// Groups opened by ``beginUndoGrouping()`` and not yet ended, innermost last.
    private var openGroups: [Group] = []
    /// The group collecting the actions registered while undoing or redoing.
    private var reverseGroup: Group?
    private var disabledCount = 0

    /// True while ``undo()`` runs its group's actions.
    public private(set) var isUndoing = false
    /// True while ``redo()`` runs its group's actions.
    public private(set) var isRedoing = false
    /// How many groups are kept to undo; 0 (the default) for no limit.
    public var levelsOfUndo = 0 {
        didSet { trim() }
    }
    /// Kept for Foundation's API; contexts group by event themselves.
    public var groupsByEvent = true

    public init() {}

    /// True when there is a group to undo (an open group with actions counts).
    public var canUndo: Bool { !undoStack.isEmpty || openGroups.contains { !$0.actions.isEmpty } }
    /// True when there is a group to redo.
    public var canRedo: Bool { !redoStack.isEmpty }
    /// How many groups are open.
    public var groupingLevel: Int { openGroups.count }
    /// False between ``disableUndoRegistration()`` and the matching ``enableUndoRegistration()``.
    public var isUndoRegistrationEnabled: Bool { disabledCount == 0 }
    /// The name of the group ``undo()`` would undo.
    public var undoActionName: String { undoStack.last?.name ?? "" }
    /// The name of the group ``redo()`` would redo.
    public var redoActionName: String { redoStack.last?.name ?? "" }

    /// Opens a group: the actions registered until the matching ``endUndoGrouping()`` undo
    /// together. Groups nest; only the outermost lands on the undo stack.
    public func beginUndoGrouping() {
        openGroups.append(Group())
    }

    /// Closes the innermost open group; does nothing when none is open.
    public func endUndoGrouping() {
        guard let group = openGroups.popLast() else { return }
        if openGroups.isEmpty {
            guard !group.actions.isEmpty else { return }
            undoStack.append(group)
            trim()
        } else {
            openGroups[openGroups.count - 1].actions += group.actions
            if !group.name.isEmpty { openGroups[openGroups.count - 1].name = group.name }
        }
    }

    /// Records `handler` to run on `target` when the current group is undone (or, while
    /// undoing, redone). Outside any group the action is a group of its own. Registering a
    /// new change empties the redo stack, as in Foundation.
    public func registerUndo<Target: AnyObject>(withTarget target: Target, handler: @escaping (Target) -> Void) {
        guard isUndoRegistrationEnabled else { return }
        let action = Action(target: ObjectIdentifier(target)) { handler(target) }
        if isUndoing || isRedoing {
            reverseGroup?.actions.append(action)
            return
        }
        redoStack.removeAll()
        if openGroups.isEmpty {
            undoStack.append(Group(actions: [action]))
            trim()
        } else {
            openGroups[openGroups.count - 1].actions.append(action)
        }
    }

    /// Names the group being recorded (for a menu's "Undo Rename").
    public func setActionName(_ name: String) {
        if openGroups.isEmpty {
            guard !undoStack.isEmpty else { return }
            undoStack[undoStack.count - 1].name = name
        } else {
            openGroups[openGroups.count - 1].name = name
        }
    }

    /// Closes an open outermost group, then undoes the last group: its actions run in
    /// reverse order, and the actions they register form the group ``redo()`` runs.
    public func undo() {
        while openGroups.count > 0 { endUndoGrouping() }
        guard let group = undoStack.popLast() else { return }
        isUndoing = true
        let redone = run(group)
        isUndoing = false
        if !redone.actions.isEmpty { redoStack.append(redone) }
    }

    /// Redoes the group last undone; the actions it registers form a group to undo again.
    public func redo() {
        guard let group = redoStack.popLast() else { return }
        isRedoing = true
        let undone = run(group)
        isRedoing = false
        if !undone.actions.isEmpty {
            undoStack.append(undone)
            trim()
        }
    }

    /// Empties both stacks (and the open groups' actions).
    public func removeAllActions() {
        undoStack = []
        redoStack = []
        for index in openGroups.indices { openGroups[index].actions = [] }
    }

    /// Removes the actions registered with `target`, keeping the others.
    public func removeAllActions(withTarget target: AnyObject) {
        let identifier = ObjectIdentifier(target)
        func keep(_ groups: [Group]) -> [Group] {
            groups.map { Group(actions: $0.actions.filter { $0.target != identifier }, name: $0.name) }
        }
        undoStack = keep(undoStack).filter { !$0.actions.isEmpty }
        redoStack = keep(redoStack).filter { !$0.actions.isEmpty }
        openGroups = keep(openGroups)
    }

    /// Stops recording until the matching ``enableUndoRegistration()`` (calls nest).
    public func disableUndoRegistration() { disabledCount += 1 }

    /// Resumes recording stopped by ``disableUndoRegistration()``.
    public func enableUndoRegistration() { disabledCount = max(0, disabledCount - 1) }

    private func run(_ group: Group) -> Group {
        reverseGroup = Group(name: group.name)
        for action in group.actions.reversed() { action.run() }
        defer { reverseGroup = nil }
        return reverseGroup ?? Group()
    }

    private func trim() {
        if levelsOfUndo > 0, undoStack.count > levelsOfUndo { undoStack.removeFirst(undoStack.count - levelsOfUndo) }
    }
}
