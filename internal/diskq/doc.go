// Package diskq is a durable queue of records on disk. It knows nothing of what the records
// hold: a caller gives each record a payload, an item count and a time, and may take part of
// a record by items.
//
// # Files
//
// A queue owns one directory (0700) holding, each 0600:
//
//   - segment files, NNNNNNNNNNNNNNNN.seg (hex, in order), of records appended one after the
//     other; a new segment starts when the newest would pass Options.SegmentBytes;
//   - position, the read position: (segment, offset, items already consumed of that
//     record, and that item's number), with the claim (see Repair), in two checksummed
//     slots written in turn;
//   - lease files, NNNNNNNNNNNNNNNN.lease, holding records popped from the tail and not yet
//     acknowledged;
//   - lock, flock'ed so that two processes never share the directory.
//
// A record is a 32-byte header (payload length, items, time, the number of its first item, a
// CRC-32C over the header and the payload, and a CRC-32C over the header alone), the
// payload, and a 4-byte trailer repeating the length so that the tail can be walked
// backwards. The header's own checksum tells a damaged payload, whose item count is still
// known, from bytes that are no header. Every item written is numbered, one after the other
// across segments, pops and restarts. Records of format 1 (earlier versions: a 24-byte
// header without the number) are still read; see record.go.
//
// # Durability and crash semantics
//
// Append returns once write(2) has: a process crash (kill -9, OOM) loses nothing Append
// returned nil for, since the page cache survives it. fsync runs every SyncInterval (or
// never, or when the caller says), so a power cut loses at most that much; the directory is
// synced at once when a segment is created or removed.
//
// Reading from the head hands out spans; Ack persists the position once every older item
// is acknowledged. A crash before that hands the span out again on the next Open: items are
// duplicated, never lost. Acknowledgements out of order are held in memory until the older
// spans are acknowledged, so a crash may repeat up to the spans in flight.
//
// PopTail takes the newest items: it writes them to a lease file first, then truncates the
// segment (trimming a record in place when only its newest items are taken). A crash after
// the lease is written and before the truncate leaves the items in both places, and Open
// puts the lease back at the tail: that batch is duplicated, once. A crash inside the trim,
// after the shortened header is written, leaves the rest of the record behind it; Open
// recognises it by the record's old trailer and skips it (Recovery.TrimmedBytes), since the
// lease holds its items. AckLease deletes the
// lease file; a crash between the sink's confirmation and that delete duplicates at most
// that batch. A lease left by a crash goes back at the tail on Open.
//
// # A directory removed while open
//
// The queue keeps every file it holds open, one descriptor per segment. Each sync (every
// SyncInterval, under SyncNever too), each new segment and Close check that the directory
// and each file are still the ones opened (device and inode). When the directory was
// removed or replaced, or files in it removed (rm -rf, systemd-tmpfiles, a mistake), the
// queue makes the directory again (0700), takes its lock again, and writes each missing
// file back from its open descriptor, the position and leases from memory, under a
// temporary name renamed into place; it then goes on in the new files. What cannot be
// written back is tried again at each check; what is still missing at Close is reported
// to Options.OnCorrupt. Options.OnRestore hears of each attempt.
//
// # Repair
//
// Open always opens the queue if the directory is usable. Damaged records are skipped,
// reading resuming at the next record whose two checksums both match, and reported to
// Options.OnCorrupt with exactly the items lost: the difference of the item numbers of the
// intact records around the damage, whatever the damage took (headers, whole records, a
// segment's start). Damage right at the head counts from the head's number in the position
// file; damage at the end of the newest segment (a torn or cut-off end, which is cut off)
// counts up to the claim, the number after the last item written, which the position file
// records on every write of it (Ack), every sync and Close. Only records of format 1, or
// writes after the last claim (a crash within a sync interval), fall back to the count a
// readable header gives, or to unknown.
// A failed write is cut back to the last whole record before Append returns its error, so a
// later read never takes half a record for data.
package diskq
