-- The evaluations' two digests are hex (128 bits in 32 characters; a judge's prompt digest 64),
-- which LZ4 barely compresses: with real digests they were 26 of the table's 32.5 MB per 700,000
-- rows. ZSTD stores them in half: 19.6 MB in all. Parts written before are recompressed as they
-- merge. Only the local tables of a cluster store data, so only they change.
ALTER TABLE evaluations MODIFY COLUMN inputs_hash CODEC(ZSTD(1));
ALTER TABLE evaluations MODIFY COLUMN activation_digest CODEC(ZSTD(1));
