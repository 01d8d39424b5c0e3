package testserver

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/morse-agent/morse/internal/testutil"
)

// kafkaPom lists the broker's jars; scripts/ensure-kafka.sh resolves it with Maven.
const kafkaPom = "testdata/containers/kafka/pom.xml"

var kafkaVersionRE = regexp.MustCompile(`<kafka\.version>([^<]+)</kafka\.version>`)

// kafkaLibsMu keeps the tests of one process from running the fetch script side by side;
// the script's own lock covers other processes.
var kafkaLibsMu sync.Mutex

// kafkaJars returns the directory that holds the broker's jars, running
// scripts/ensure-kafka.sh first when they are missing or were fetched for another pom. The
// check mirrors the script's: libs/.complete holds the sha256 of the pom.
func kafkaJars() (dir string, fetched bool, err error) {
	kafkaLibsMu.Lock()
	defer kafkaLibsMu.Unlock()
	root, err := moduleRoot()
	if err != nil {
		return "", false, err
	}
	pom, err := os.ReadFile(filepath.Join(root, kafkaPom))
	if err != nil {
		return "", false, fmt.Errorf("testserver: kafka: %w", err)
	}
	m := kafkaVersionRE.FindSubmatch(pom)
	if m == nil {
		return "", false, fmt.Errorf("testserver: kafka: no <kafka.version> in %s", kafkaPom)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", false, fmt.Errorf("testserver: kafka: %w", err)
	}
	dir = filepath.Join(cache, "morse", "kafka", string(m[1]), "libs")
	sum := sha256.Sum256(pom)
	if b, err := os.ReadFile(filepath.Join(dir, ".complete")); err == nil &&
		strings.TrimSpace(string(b)) == hex.EncodeToString(sum[:]) {
		return dir, false, nil
	}
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "ensure-kafka.sh"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", false, fmt.Errorf("testserver: scripts/ensure-kafka.sh: %w\n%s", err, stderr.String())
	}
	if got := strings.TrimSpace(string(out)); got != dir {
		return "", false, fmt.Errorf("testserver: scripts/ensure-kafka.sh put the jars in %q, expected %q", got, dir)
	}
	return dir, true, nil
}

// newClusterID returns a random cluster id in the form Kafka's StorageTool requires: the 16
// bytes of a UUID in URL-safe base64 without padding. Kafka never makes one that starts with
// a dash, because a command line would read it as an option.
func newClusterID() (string, error) {
	for {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", err
		}
		b[6] = b[6]&0x0f | 0x40 // version 4
		b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
		if id := base64.RawURLEncoding.EncodeToString(b[:]); id[0] != '-' {
			return id, nil
		}
	}
}

// The listener names of the broker. PLAINTEXT carries the tests' admin traffic and the
// broker's own; CONTROLLER is the KRaft quorum's.
const (
	lnPlain      = "PLAINTEXT"
	lnController = "CONTROLLER"
	lnSASL       = "SASL_PLAINTEXT"
	lnSSL        = "SSL"
	lnSASLSSL    = "SASL_SSL"
)

// listenerNames are the listeners that opts asks for, the controller's last.
func (o KafkaOptions) listenerNames() []string {
	names := []string{lnPlain}
	if len(o.Users) > 0 {
		names = append(names, lnSASL)
	}
	if o.TLS {
		names = append(names, lnSSL)
		if len(o.Users) > 0 {
			names = append(names, lnSASLSSL)
		}
	}
	return append(names, lnController)
}

// serverProperties writes Kafka's server.properties for one node that is broker and
// controller at once.
func (k *Kafka) serverProperties() string {
	p := k.baseProperties()
	if len(k.opts.Users) > 0 {
		k.saslProperties(p)
	}
	if k.opts.TLS {
		p["ssl.keystore.type"] = "PEM"
		p["ssl.keystore.location"] = k.serverPEM()
		p["ssl.truststore.type"] = "PEM"
		p["ssl.truststore.location"] = k.CAFile()
		p["ssl.endpoint.identification.algorithm"] = ""
		// Only the SSL listener asks for a client certificate: on SASL_SSL the SASL
		// login is what identifies the client.
		p["listener.name.ssl.ssl.client.auth"] = cmpOr(k.opts.TLSClientAuth, "none")
	}
	if k.opts.Authorizer {
		p["authorizer.class.name"] = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
		// The PLAINTEXT and CONTROLLER listeners know no users, so their principal is
		// ANONYMOUS: it must be a super user for the node to talk to itself.
		p["super.users"] = "User:ANONYMOUS;User:" + KafkaAdmin + ";User:CN=" + kafkaClientCN
	}
	for key, v := range k.opts.Props {
		p[key] = v
	}
	keys := make([]string, 0, len(p))
	for key := range p {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, key := range keys {
		fmt.Fprintf(&b, "%s=%s\n", key, p[key])
	}
	return b.String()
}

// baseProperties are the listeners, the KRaft roles, the data directory and what a single
// node needs.
func (k *Kafka) baseProperties() map[string]string {
	var listeners, advertised []string
	for _, name := range k.opts.listenerNames() {
		addr := name + "://" + k.addrs[name]
		listeners = append(listeners, addr)
		if name != lnController {
			advertised = append(advertised, addr)
		}
	}
	return map[string]string{
		"process.roles":                  "broker,controller",
		"node.id":                        "1",
		"controller.quorum.voters":       "1@" + k.addrs[lnController],
		"controller.listener.names":      lnController,
		"inter.broker.listener.name":     lnPlain,
		"listeners":                      strings.Join(listeners, ","),
		"advertised.listeners":           strings.Join(advertised, ","),
		"listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL",
		"log.dirs":                       filepath.Join(k.dir, "data"),
		"num.partitions":                 strconv.Itoa(max(k.opts.Partitions, 1)),
		"auto.create.topics.enable":      strconv.FormatBool(!k.opts.NoAutoCreateTopics),
		// One node: without replication factors of 1 the internal topics are never
		// created, and consumer groups find no coordinator.
		"offsets.topic.replication.factor":                 "1",
		"transaction.state.log.replication.factor":         "1",
		"transaction.state.log.min.isr":                    "1",
		"share.coordinator.state.topic.replication.factor": "1",
		"share.coordinator.state.topic.min.isr":            "1",
		// Fewer partitions for the internal topics than the default 50 make the first
		// group or transaction coordinator ready sooner; a test sees no other difference.
		"offsets.topic.num.partitions":         "4",
		"transaction.state.log.num.partitions": "4",
		// A group's first member does not wait 3 s for others to join.
		"group.initial.rebalance.delay.ms": "0",
	}
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// saslProperties enables PLAIN and both SCRAM mechanisms on the SASL listeners. PLAIN users
// live in the JAAS config; SCRAM credentials are written into the metadata log by the
// format step (see scramArgs).
func (k *Kafka) saslProperties(p map[string]string) {
	p["sasl.enabled.mechanisms"] = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
	var plain strings.Builder
	plain.WriteString("org.apache.kafka.common.security.plain.PlainLoginModule required")
	for _, u := range k.opts.Users {
		fmt.Fprintf(&plain, " user_%s=%q", u.Name, u.Password)
	}
	plain.WriteString(";")
	for _, ln := range []string{lnSASL, lnSASLSSL} {
		prefix := "listener.name." + strings.ToLower(ln) + "."
		p[prefix+"plain.sasl.jaas.config"] = plain.String()
		for _, mech := range []string{"scram-sha-256", "scram-sha-512"} {
			p[prefix+mech+".sasl.jaas.config"] = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
		}
	}
}

// scramArgs are StorageTool's --add-scram arguments: every user gets both SCRAM mechanisms.
func (o KafkaOptions) scramArgs() []string {
	var args []string
	for _, u := range o.Users {
		for _, mech := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512"} {
			args = append(args, "--add-scram", fmt.Sprintf("%s=[name=%s,password=%s]", mech, u.Name, u.Password))
		}
	}
	return args
}

// validate refuses user names and passwords that the JAAS and --add-scram syntaxes cannot
// carry as they are.
func (o KafkaOptions) validate() error {
	for _, u := range o.Users {
		if u.Name == "" || strings.ContainsAny(u.Name+u.Password, "\",[]=\\ ") {
			return fmt.Errorf("testserver: kafka user %q: names and passwords must be non-empty and free of quotes, commas, brackets, equals signs, backslashes and spaces", u.Name)
		}
	}
	return nil
}

// log4jConfig sends the broker's log to its standard output at WARN, and the line that
// tells the harness the broker is up at INFO.
const log4jConfig = `status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.out.ref = out
logger.started.name = kafka.server.KafkaRaftServer
logger.started.level = info
`

// kafkaClientCN names the client certificate; the broker's principal for it is
// User:CN=morse-client, a super user under KafkaOptions.Authorizer.
const kafkaClientCN = "morse-client"

// serverPEM is the broker's key and certificate chain in one file.
func (k *Kafka) serverPEM() string { return k.certs.ServerChain }

// CAFile is the PEM file of the CA that signed the broker's certificate and the client
// certificate; empty unless KafkaOptions.TLS.
func (k *Kafka) CAFile() string { return k.tlsFile(func(c *testutil.Certs) string { return c.CA }) }

// ClientCertFile is a client certificate signed by CAFile's CA, for mutual TLS.
func (k *Kafka) ClientCertFile() string {
	return k.tlsFile(func(c *testutil.Certs) string { return c.ClientCert })
}

// ClientKeyFile is the key of ClientCertFile.
func (k *Kafka) ClientKeyFile() string {
	return k.tlsFile(func(c *testutil.Certs) string { return c.ClientKey })
}

func (k *Kafka) tlsFile(file func(*testutil.Certs) string) string {
	if k.certs == nil {
		return ""
	}
	return file(k.certs)
}

// writeTLS makes the broker's CA, server and client certificates (testutil.WriteCerts).
func (k *Kafka) writeTLS() error {
	dir := filepath.Join(k.dir, "tls")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("make the broker's TLS directory: %w", err)
	}
	certs, err := testutil.WriteCerts(dir, kafkaClientCN)
	if err != nil {
		return err
	}
	k.certs = certs
	return nil
}
