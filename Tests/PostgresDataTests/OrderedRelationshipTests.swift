import Foundation
import PostgresClient
@testable import PostgresData
import PostgresDataTesting
import Testing

@Entity final class Playlist: ManagedObject {
    var name: String = ""
    @Relationship(deleteRule: .cascade, inverse: \Track.playlist) var tracks: [Track]
    @Relationship(inverse: \Genre.playlists) var genres: [Genre]
}

@Entity final class Track: ManagedObject {
    var title: String = ""
    var playlist: Playlist?
}

@Entity final class Genre: ManagedObject {
    var name: String = ""
    var playlists: Set<Playlist>
}

let playlistModel = ManagedObjectModel(Playlist.self, Track.self, Genre.self)

/// Ordered to-many relationships (Core Data's `isOrdered`): a position column, written only
/// for the objects that move, read in order by every path.
@Suite struct OrderedRelationshipTests {
    // MARK: Positions, without a server

    @Test func onlyObjectsOutOfTheLongestOrderedRunMove() {
        // Appending writes the new object only, after the last.
        #expect(OrderPositions.assign([1, 2, 3, nil]) == [1, 2, 3, 4])
        // Prepending: before the first.
        #expect(OrderPositions.assign([nil, 1, 2, 3]) == [0, 1, 2, 3])
        // Moving the last object to the middle: into the gap, the others stay.
        #expect(OrderPositions.assign([1, 3, 2]) == [1, 1.5, 2])
        let moved = OrderPositions.assign([1, 4, 2, 3])
        #expect(moved[0] == 1 && moved[2] == 2 && moved[3] == 3 && moved[1] > 1 && moved[1] < 2)
        // Reversed: one object keeps its position, the others move.
        let reversed = OrderPositions.assign([3, 2, 1])
        #expect(zip(reversed, [3.0, 2, 1]).filter { $0 == $1 }.count == 1)
        #expect(reversed == reversed.sorted())
        // No room left between two neighbours: every object is numbered again.
        #expect(OrderPositions.assign([1, nil, 1 + 1e-10]) == [1, 2, 3])
        #expect(OrderPositions.assign([]) == [])
    }

    @Test func theSchemaHasAPositionColumnWhereTheRowsAre() throws {
        #expect(playlistModel.problems.isEmpty)
        let sql = playlistModel.createSchemaSQL()
        #expect(sql.contains(#""tracks_position" double precision NOT NULL DEFAULT 0"#))
        #expect(sql.contains(#""genres_position" double precision NOT NULL DEFAULT 0,"#))
        let playlist = try #require(playlistModel.entitiesByName["Playlist"])
        let index = try #require(playlist.propertyIndex(named: "tracks"))
        #expect(RelationshipFetchPlan.relatedKeys(of: playlist, relationship: index) ==
            #"SELECT "id", "tracks_position" FROM "track" WHERE "playlist_id" = $1 ORDER BY "tracks_position", "id""#)
        var toOne = RelationshipDescription(name: "owner", destination: "Owner", inverse: "things")
        toOne.isOrdered = true
        let problems = ManagedObjectModel(entities: [
            EntityDescription(name: "Owner", properties: [.relationship(RelationshipDescription(name: "things", destination: "Thing", inverse: "owner", toMany: true))]),
            EntityDescription(name: "Thing", properties: [.relationship(toOne)]),
        ]).problems
        #expect(problems == ["Thing.owner is ordered but to-one: only a to-many relationship keeps an order"])
    }

    // MARK: Against the server

    func container() async throws -> PersistentContainer {
        let configuration = try await TestDatabase.fresh(prefix: "pd_ordered")
        let container = PersistentContainer(name: "Playlists", model: playlistModel)
        try await container.loadPersistentStores(configuration: configuration, options: .init(createSchemaIfMissing: true))
        return container
    }

    func positions(_ container: PersistentContainer) async throws -> [String] {
        try await container.rawStrings("SELECT title || '@' || tracks_position FROM track ORDER BY tracks_position, id")
    }

    @Test func anOrderSurvivesSavesAndAMoveWritesOneRow() async throws {
        let container = try await container()
        let context = container.newBackgroundContext()
        let playlistID = try await context.perform {
            let playlist = Playlist(context: context)
            playlist.tracks = ["c", "a", "b"].map { title in
                let track = Track(context: context)
                track.title = title
                return track
            }
            try context.save()
            #expect(playlist.tracks.map(\.title) == ["c", "a", "b"])
            return playlist.objectID
        }
        let rows1 = try await positions(container)
        #expect(rows1 == ["c@1", "a@2", "b@3"])
        // Another context reads the order, by the relationship fault and by prefetching.
        try await container.performBackgroundTask { reader in
            let playlist = try #require(try reader.existingObject(with: playlistID) as? Playlist)
            #expect(playlist.tracks.map(\.title) == ["c", "a", "b"])
        }
        try await container.performBackgroundTask { reader in
            var request = FetchRequest<Playlist>()
            request.relationshipKeyPathsForPrefetching = ["tracks"]
            let playlist = try #require(try reader.fetch(request).first)
            #expect(playlist.tracks.map(\.title) == ["c", "a", "b"])
        }
        // A context that merges saves sees every new order.
        let watcher = container.newBackgroundContext()
        watcher.automaticallyMergesChangesFromParent = true
        try await watcher.perform {
            let playlist = try #require(try watcher.existingObject(with: playlistID) as? Playlist)
            #expect(playlist.tracks.map(\.title) == ["c", "a", "b"])
        }
        // Moving b to the front writes b alone.
        try await context.perform {
            let playlist = try #require(try context.existingObject(with: playlistID) as? Playlist)
            var tracks = playlist.tracks
            tracks.insert(tracks.removeLast(), at: 0)
            playlist.tracks = tracks
            #expect(playlist.tracks.map(\.title) == ["b", "c", "a"])
            #expect(playlist.hasChanges)
            try context.save()
            #expect(!playlist.hasChanges)
            // The moved track's new version was read back: it saves without a conflict.
            let b = try #require(playlist.tracks.first)
            b.title = "B"
            try context.save()
        }
        try await watcher.perform {
            let playlist = try #require(try watcher.existingObject(with: playlistID) as? Playlist)
            #expect(playlist.tracks.map(\.title) == ["B", "c", "a"])
        }
        let rows2 = try await positions(container)
        #expect(rows2 == ["B@0", "c@1", "a@2"])
        // A track given the playlist from its side, by a context that never read the order, goes last.
        try await container.performBackgroundTask { other in
            let playlist = try #require(try other.existingObject(with: playlistID) as? Playlist)
            let track = Track(context: other)
            track.title = "d"
            track.playlist = playlist
            try other.save()
        }
        let rows3 = try await positions(container)
        #expect(rows3 == ["B@0", "c@1", "a@2", "d@3"])
        try await container.performBackgroundTask { reader in
            let playlist = try #require(try reader.existingObject(with: playlistID) as? Playlist)
            #expect(playlist.tracks.map(\.title) == ["B", "c", "a", "d"])
            // Removing one moves no other.
            reader.delete(playlist.tracks[1])
            try reader.save()
            #expect(playlist.tracks.map(\.title) == ["B", "a", "d"])
        }
        let rows4 = try await positions(container)
        #expect(rows4 == ["B@0", "a@2", "d@3"])
    }

    @Test func aManyToManyOrderIsKeptInTheJoinTable() async throws {
        let container = try await container()
        let (playlistID, genreNames) = try await container.performBackgroundTask { context in
            let playlist = Playlist(context: context)
            let genres = ["jazz", "rock", "folk"].map { name in
                let genre = Genre(context: context)
                genre.name = name
                return genre
            }
            playlist.genres = genres
            try context.save()
            playlist.genres = [genres[2], genres[0], genres[1]]
            try context.save()
            return (playlist.objectID, playlist.genres.map(\.name))
        }
        #expect(genreNames == ["folk", "jazz", "rock"])
        try await container.performBackgroundTask { reader in
            let playlist = try #require(try reader.existingObject(with: playlistID) as? Playlist)
            #expect(playlist.genres.map(\.name) == ["folk", "jazz", "rock"])
            #expect(playlist.genres.first?.playlists.count == 1)
        }
        // One join row moved: folk went before jazz.
        let links = try await container.rawStrings("SELECT g.name || '@' || l.genres_position FROM genre g JOIN genre_playlists l ON l.genre_id = g.id ORDER BY l.genres_position")
        #expect(links == ["folk@0", "jazz@1", "rock@2"])
    }
}
