# The lethedb command (from `pip install lethedb`, `npm install lethedb` as npx lethedb, or
# scripts/release) in a CI job: a free port, in memory, ready when it prints its JSON line.
lethedb serve --bind 127.0.0.1:0 --in-memory > lethedb.out &
until grep -q '^{"ready":true' lethedb.out; do sleep 0.01; done
endpoint=$(sed -n 's/^{"ready":true,"endpoint":"\([^"]*\)".*/\1/p' lethedb.out)
curl -sf "${endpoint}ready"   # {"status":"ready"}; point the tests at $endpoint
kill %1
