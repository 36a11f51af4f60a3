#!/bin/sh
# Builds the OpenAS2 server (tag v4.9.0) from its source with Debian's Java packages and
# plain javac, for Wharf's live interop trial (internal/protocol/as2/interop_openas2_test.go).
#
#   openas2_build.sh SOURCE OUT
#
# SOURCE is a checkout of OpenAS2App; OUT receives the classes and a file "classpath" with
# the class path to run them. Debian packages needed:
#   default-jdk-headless libbcprov-java libbcpkix-java libbcjmail-java libjakarta-mail-java
#   libjakarta-activation-java libjakarta-annotation-api-java libdom4j-java
#   libcommons-lang3-java libcommons-cli-java libcommons-io-java libslf4j-java
#   liblogback-java libhttpclient-java libhttpcore-java libh2-java libhikaricp-java
set -eu
if [ $# -ne 2 ]; then
	echo "usage: $0 OPENAS2_SOURCE OUT" >&2
	exit 2
fi
src=$1
out=$2
java_src=$src/Server/src/main/java
[ -d "$java_src/org/openas2" ] || { echo "$java_src/org/openas2: not an OpenAS2App source tree" >&2; exit 1; }

cp=""
# jakarta-mail comes first: Debian's bcprov.jar names javax.mail.jar in its manifest
# Class-Path, whose com.sun.mail classes would otherwise shadow Jakarta Mail's own.
for j in jakarta-mail jakarta-activation bcprov bcpkix bcutil bcjmail jakarta-annotation-api dom4j \
	commons-lang3 commons-cli commons-io commons-logging commons-codec slf4j-api logback-classic logback-core \
	httpclient httpcore h2 HikariCP; do
	f=/usr/share/java/$j.jar
	[ -f "$f" ] || { echo "$f is missing: install the Debian packages listed in $0" >&2; exit 1; }
	cp=$cp${cp:+:}$f
done

rm -rf "$out"
mkdir -p "$out/src" "$out/classes"
cp -r "$java_src/org" "$out/src/"
# Left out, being optional and needing libraries Debian lacks: the REST API (Jersey,
# Grizzly, Jackson), the JMS queue poller (Qpid JMS) and PGP.
rm -rf "$out/src/org/openas2/cmd/processor/restapi" "$out/src/org/openas2/pgp" \
	"$out/src/org/openas2/cmd/processor/RestCommandProcessor.java" \
	"$out/src/org/openas2/processor/receiver/JmsPollingModule.java"
# Debian 12's commons-lang3 (3.12) lacks BasicThreadFactory.builder() (3.18 and later); the
# Builder constructor it stands for is there. This names the scheduler's threads only.
sed -i 's/BasicThreadFactory\.builder()/new BasicThreadFactory.Builder()/' \
	"$out/src/org/openas2/schedule/SchedulerComponent.java"
find "$out/src" -name '*.java' >"$out/sources.txt"
javac -nowarn -encoding UTF-8 -d "$out/classes" -cp "$cp" @"$out/sources.txt"
echo "$out/classes:$cp" >"$out/classpath"
