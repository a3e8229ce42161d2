# The image (docker load -i lethedb-image-VERSION.tar.gz, or scripts/release), on a random host
# port: it advertises the host and port each client used, so SDKs need no extra option.
id=$(docker run -d -p 127.0.0.1::8081 lethedb serve --in-memory)
endpoint="http://$(docker port "$id" 8081/tcp)/"   # e.g. http://127.0.0.1:32768/
until docker logs "$id" | grep -q '^{"ready":true'; do sleep 0.01; done
curl -sf "${endpoint}ready"   # {"status":"ready"}; point the tests at $endpoint
docker rm -f -v "$id"
