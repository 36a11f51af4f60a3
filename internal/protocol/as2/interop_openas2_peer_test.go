package as2_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
	"time"

	"wharf/internal/certs/certstest"
	"wharf/internal/gateway/gatewaytest"
	"wharf/internal/protocol/as2/as2test"
)

// openAS2Env names an OpenAS2App source directory (tag v4.9.0); the live trial against
// OpenAS2 runs only when it is set.
const openAS2Env = "WHARF_INTEROP_OPENAS2"

// oa2Partnership is one OpenAS2 partnership of the trial: for an outbound cell OpenAS2
// only receives from Wharf; for an inbound cell it sends to Wharf with these attributes.
type oa2Partnership struct {
	ID       string // OpenAS2's AS2 id in this cell
	Sends    bool
	Attrs    [][2]string
	Received string // where OpenAS2 stores what Wharf sends
	Outbox   string // where a file to send is dropped
	Sent     string // where OpenAS2 moves a file once the partner's MDN was accepted
	Failed   string // where a file goes that failed
}

// oa2Peer is a configured OpenAS2 server for one gateway.
type oa2Peer struct {
	dir      string
	url      string // its AS2 receiver
	mdnURL   string // its async MDN receiver
	id       as2test.Identity
	classes  string // the class path
	wharfURL string
}

const oa2Config = `<?xml version="1.0" encoding="UTF-8"?>
<openas2>
  <properties storageBaseDir="{{.Dir}}/data" as2_receive_message_filename_fallback="$rand.shortUUID$"
      as2_message_id_format="$date.yyyyMMddHHmmssZ$-$rand.123456$-$msg.sender.as2_id$_$msg.receiver.as2_id$"/>
  <certificates classname="org.openas2.cert.PKCS12CertificateFactory" identifier="as2_certs"
      filename="{{.Dir}}/as2.p12" password="interop" interval="300"/>
  <commands classname="org.openas2.cmd.XMLCommandRegistry" filename="{{.Dir}}/commands.xml"/>
  <processor classname="org.openas2.processor.DefaultProcessor" pendingMDN="{{.Dir}}/data/pendingMDN"
      pendingMDNinfo="{{.Dir}}/data/pendingMDNinfo" resend_max_retries="0">
    <module classname="org.openas2.processor.sender.AS2SenderModule" readtimeout="30000"/>
    <module classname="org.openas2.processor.sender.MDNSenderModule"/>
    <module classname="org.openas2.processor.storage.MDNFileModule" protocol="as2" tempdir="{{.Dir}}/data/temp"
        filename="{{.Dir}}/data/mdn/$mdn.msg.sender.as2_id$-$mdn.msg.receiver.as2_id$/$rand.UUID$"/>
    <module classname="org.openas2.processor.storage.MessageFileModule" protocol="as2" tempdir="{{.Dir}}/data/temp"
        filename="{{.Dir}}/data/inbox/$msg.sender.as2_id$-$msg.receiver.as2_id$/$rand.UUID$"
        header="{{.Dir}}/data/headers/$msg.sender.as2_id$-$msg.receiver.as2_id$/$rand.UUID$"/>
    <module classname="org.openas2.processor.receiver.AS2ReceiverModule" address="127.0.0.1" port="{{.Port}}"
        errordir="{{.Dir}}/data/inbox-error" errorformat="sender.as2_id, receiver.as2_id, headers.message-id"/>
    <module classname="org.openas2.processor.receiver.AS2MDNReceiverModule" address="127.0.0.1" port="{{.MDNPort}}"/>
    <module classname="org.openas2.processor.resender.DirectoryResenderModule" resenddir="{{.Dir}}/data/resend"
        errordir="{{.Dir}}/data/resend-error" resenddelay="3600"/>
  </processor>
  <pollerConfigBase classname="org.openas2.processor.receiver.AS2DirectoryPollingModule"
      outboxdir="{{.Dir}}/data/outbox/$partnership.sender.as2_id$" errordir="{{.Dir}}/data/failed/$partnership.sender.as2_id$"
      interval="1" defaults="sender.as2_id=$partnership.sender.as2_id$, receiver.as2_id=$partnership.receiver.as2_id$"
      sendfilename="true" mimetype="application/octet-stream"/>
  <partnerships classname="org.openas2.partner.XMLPartnershipFactory" filename="{{.Dir}}/partnerships.xml" interval="3600"/>
</openas2>
`

const oa2Partnerships = `<partnerships>
  <partner name="WHARF" as2_id="WHARF" x509_alias="wharf" email="wharf@example.invalid"/>
{{- range .Cells}}
  <partner name="{{.ID}}" as2_id="{{.ID}}" x509_alias="oa2" email="openas2@example.invalid"/>
{{- if .Sends}}
  <partnership name="{{.ID}}-to-WHARF">
    <sender name="{{.ID}}"/>
    <receiver name="WHARF"/>
    <pollerConfig enabled="true" sentdir="{{.Sent}}"/>
    <attribute name="protocol" value="as2"/>
    <attribute name="as2_url" value="{{$.WharfURL}}"/>
    <attribute name="subject" value="interop"/>
    <attribute name="content_transfer_encoding" value="binary"/>
    <attribute name="as2_mdn_to" value="openas2@example.invalid"/>
    <attribute name="resend_max_retries" value="0"/>
{{- range .Attrs}}
    <attribute name="{{index . 0}}" value="{{index . 1}}"/>
{{- end}}
  </partnership>
{{- else}}
  <partnership name="WHARF-to-{{.ID}}">
    <sender name="WHARF"/>
    <receiver name="{{.ID}}"/>
    <attribute name="store_received_file_to" value="{{.Received}}/$rand.UUID$"/>
  </partnership>
{{- end}}
{{- end}}
</partnerships>
`

// startOpenAS2 configures and starts OpenAS2 with a partnership per cell, trading with the
// Wharf identity at wharfURL; it stops when the test ends.
func startOpenAS2(t *testing.T, classpath string, wharf as2test.Identity, wharfURL string, cells []*oa2Partnership) *oa2Peer {
	t.Helper()
	dir := t.TempDir()
	p := &oa2Peer{dir: dir, classes: classpath, wharfURL: wharfURL, id: as2test.NewIdentity(t, "openas2-peer")}
	port, mdnPort := gatewaytest.FreePort(t), gatewaytest.FreePort(t)
	p.url, p.mdnURL = fmt.Sprintf("http://127.0.0.1:%d/", port), fmt.Sprintf("http://127.0.0.1:%d/", mdnPort)
	for _, c := range cells {
		for i, a := range c.Attrs {
			if a[1] == "$async$" {
				c.Attrs[i][1] = p.mdnURL
			}
		}
		c.Received = filepath.Join(dir, "data", "received", c.ID)
		c.Outbox = filepath.Join(dir, "data", "outbox", c.ID)
		c.Sent = filepath.Join(dir, "data", "sent", c.ID)
		c.Failed = filepath.Join(dir, "data", "failed", c.ID)
		for _, d := range []string{c.Received, c.Outbox, c.Sent} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
	}
	render := func(name, text string, data any) {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := template.Must(template.New(name).Parse(text)).Execute(f, data); err != nil {
			t.Fatal(err)
		}
	}
	render("config.xml", oa2Config, map[string]any{"Dir": dir, "Port": port, "MDNPort": mdnPort})
	render("partnerships.xml", oa2Partnerships, map[string]any{"Cells": cells, "WharfURL": wharfURL})
	if err := os.WriteFile(filepath.Join(dir, "commands.xml"), []byte("<commands/>\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.writeKeystore(t, wharf)

	cmd := exec.Command("java", "-cp", classpath, "-Dlogback.configurationFile="+p.logback(t), "org.openas2.app.OpenAS2Server", filepath.Join(dir, "config.xml"))
	cmd.Dir = dir
	logFile, err := os.Create(filepath.Join(dir, "openas2.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start OpenAS2: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logFile.Close()
		if t.Failed() {
			t.Logf("OpenAS2's log:\n%s", p.log())
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for !p.started() {
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logFile.Name())
			t.Fatalf("OpenAS2 did not start:\n%s", log)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return p
}

// started reports that OpenAS2 logged its start.
func (p *oa2Peer) started() bool {
	f, err := os.Open(filepath.Join(p.dir, "openas2.log"))
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if strings.Contains(s.Text(), " started.") {
			return true
		}
	}
	return false
}

func (p *oa2Peer) log() string {
	b, _ := os.ReadFile(filepath.Join(p.dir, "openas2.log"))
	return string(b)
}

// logback sets OpenAS2's log to INFO on the console (its default is DEBUG).
func (p *oa2Peer) logback(t *testing.T) string {
	path := filepath.Join(p.dir, "logback.xml")
	const conf = `<configuration>
  <appender name="out" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%d %-5level %logger{20} %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="out"/></root>
</configuration>
`
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeKeystore makes OpenAS2's PKCS12 key store: its own key as "oa2" and Wharf's
// certificate as "wharf".
func (p *oa2Peer) writeKeystore(t *testing.T, wharf as2test.Identity) {
	certFile, keyFile := as2test.WritePEM(t, p.dir, p.id.Cert, p.id.Key)
	store := filepath.Join(p.dir, "as2.p12")
	as2test.OpenSSL(t, "pkcs12", "-export", "-name", "oa2", "-in", certFile, "-inkey", keyFile,
		"-passout", "pass:interop", "-out", store)
	wharfCert := filepath.Join(p.dir, "wharf.crt")
	if err := os.WriteFile(wharfCert, certstest.CertsPEM(wharf.Cert), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("keytool", "-importcert", "-noprompt", "-alias", "wharf", "-file", wharfCert,
		"-keystore", store, "-storetype", "PKCS12", "-storepass", "interop").CombinedOutput()
	if err != nil {
		t.Fatalf("keytool: %v: %s", err, out)
	}
}

// buildOpenAS2 compiles OpenAS2 from the source named by WHARF_INTEROP_OPENAS2 with
// scripts/interop/openas2_build.sh and returns the class path, or skips the test when
// the trial is not set up.
func buildOpenAS2(t *testing.T) string {
	t.Helper()
	src := os.Getenv(openAS2Env)
	if src == "" {
		t.Skipf("%s is unset: the live trial against OpenAS2 needs its source and Debian's Java packages (see docs/as2.md)", openAS2Env)
	}
	script, err := filepath.Abs("../../../scripts/interop/openas2_build.sh")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if b, err := exec.Command("sh", script, src, out).CombinedOutput(); err != nil {
		t.Fatalf("build OpenAS2: %v\n%s", err, b)
	}
	cp, err := os.ReadFile(filepath.Join(out, "classpath"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(cp))
}
