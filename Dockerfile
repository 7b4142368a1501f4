# accelschedd and accelsched-agent on Debian 12, built from Debian's packages with the
# project's own scripts. The agent's DaemonSet runs the same image (deploy/kubernetes).
FROM debian:12 AS build
WORKDIR /src
COPY . .
RUN bash scripts/setup.sh --build-only && \
    cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DACCELSCHED_BUILD_TESTS=OFF \
      -DACCELSCHED_BUILD_BENCH=OFF && \
    cmake --build build -j2 --target accelschedd accelsched-agent

FROM debian:12
RUN apt-get update && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libgrpc++1.51 libprotobuf32 libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0 \
      libsqlite3-0 libpq5 libabsl20220623 && \
    rm -rf /var/lib/apt/lists/*
COPY --from=build /src/build/accelschedd /usr/local/bin/accelschedd
COPY --from=build /src/build/accelsched-agent /usr/local/bin/accelsched-agent
VOLUME /data
EXPOSE 50051 9464
ENTRYPOINT ["/usr/local/bin/accelschedd", "--db=/data/accelsched.db", \
            "--listen=0.0.0.0:50051", "--metrics_listen=0.0.0.0:9464"]
