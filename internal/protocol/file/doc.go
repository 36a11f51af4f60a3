// Package file is the file-system module: the file-poller source picks documents up from
// a directory tree, and the file-writer target drops them into one.
//
// # Poller
//
// The poller walks its directory exactly as deep as its pattern (default {to}/{filename}).
// It never follows symbolic links, ignores dot files, common temporary names of writers
// (*.tmp, *.part, *~, …), *.meta.json sidecars and its own unroutable and processed
// directories. A file is taken once its size and modification time (and those of its
// sidecar) have not changed for stable_for across two scans. Parties come from the path
// segments, the original file name from the last one; an optional sidecar
// <file>.meta.json carries correlation_id and origin_event_id. A file that does not fit the
// pattern, names an invalid or unknown party, has an invalid name or a bad sidecar is moved
// to the unroutable directory (same relative path) beside a <name>.reason.txt.
//
// # In-flight journal
//
// A taken file leaves the outbox only after the core has stored it, and a crash between
// the commit and the clean-up must not ingest it a second time. The poller therefore keeps
// a journal in <directory>/.wharf-inflight (same file system as the outbox, so a rename
// is atomic):
//
//  1. For each batch it writes and fsyncs <batch>.batch.json listing every item: its
//     inflight name <batch>-<n>, original relative path, parties, file name, correlation
//     id and origin event id.
//  2. It renames each file to .wharf-inflight/<batch>-<n> (its sidecar to
//     <batch>-<n>.meta.json) and fsyncs the directory.
//  3. It calls Ingest once for the batch. Every item carries an origin event id: the
//     sidecar's, or else wharf-file-<batch>-<n>, derived from the inflight name. Without
//     a processed_directory the payload store may take the claimed file by a hard link
//     rather than a copy (storage.FileBody), since the poller only deletes it afterwards.
//  4. Stored items are deleted (or moved to processed_directory); refused items are moved
//     to the unroutable directory with the reason. When no item of a batch is left, the
//     journal file is removed.
//
// If Ingest fails for the whole batch, the poller asks the core (see Lookup) whether each
// item was stored after all; stored ones are finished, the others are moved back to their
// place in the outbox to be taken again on a later scan.
//
// Every scan starts by reconciling the journal, which is how a restart finishes what a
// crash interrupted. A journaled item still present in the inflight directory is looked up
// by its source instance and origin event id: if the core has it, the file is finished as
// stored; if not, it is ingested again. While a lookup fails, the poller takes nothing new.
// An ingester without Lookup cannot answer, so such items are ingested again (nothing is
// lost, a duplicate is possible). A file in the inflight directory that no journal names
// is moved to the unroutable directory.
//
// # Writer
//
// The writer renders its pattern (default {from}/{original_filename}), makes every path
// segment safe for Windows file systems and visible (no leading dot), refuses any path
// that leaves its directory or passes through a symbolic link, writes to a temporary dot
// file in the target directory, fsyncs it, and hard-links it into place (renames it with
// on_collision overwrite) before fsyncing the directory. A link never replaces a file, so
// a name taken by other bytes is decided by on_collision without a check-then-write race:
// suffix tries name-1.ext, name-2.ext, … in turn, fail fails the delivery. A file of the
// same name with the same bytes counts as delivered. The delivered result's note names
// the file written, for the delivery's history.
package file
