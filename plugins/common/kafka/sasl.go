package kafka

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/morse-agent/morse"
)

// SASLConfig holds Telegraf's SASL options. PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and
// OAUTHBEARER with a static token are supported; GSSAPI (Kerberos) and AWS-MSK-IAM are not,
// and asking for them is a config error rather than a connection without authentication.
type SASLConfig struct {
	SASLUsername    morse.Secret      `toml:"sasl_username"`
	SASLPassword    morse.Secret      `toml:"sasl_password"`
	SASLMechanism   string            `toml:"sasl_mechanism"`
	SASLVersion     *int              `toml:"sasl_version"`
	SASLExtensions  map[string]string `toml:"sasl_extensions"`
	SASLAccessToken morse.Secret      `toml:"sasl_access_token"`

	// Accepted so that Telegraf configs load; only meaningful with the mechanisms that
	// morse refuses.
	SASLGSSAPIServiceName        string `toml:"sasl_gssapi_service_name"`
	SASLGSSAPIAuthType           string `toml:"sasl_gssapi_auth_type"`
	SASLGSSAPIDisablePAFXFAST    bool   `toml:"sasl_gssapi_disable_pafxfast"`
	SASLGSSAPIKerberosConfigPath string `toml:"sasl_gssapi_kerberos_config_path"`
	SASLGSSAPIKeyTabPath         string `toml:"sasl_gssapi_key_tab_path"`
	SASLGSSAPIRealm              string `toml:"sasl_gssapi_realm"`
	SASLAWSMSKIAMRegion          string `toml:"sasl_aws_msk_iam_region"`
	SASLAWSMSKIAMProfile         string `toml:"sasl_aws_msk_iam_profile"`
	SASLAWSMSKIAMRole            string `toml:"sasl_aws_msk_iam_role"`
	SASLAWSMSKIAMSession         string `toml:"sasl_aws_msk_iam_session"`
}

// saslMechanism is the mechanism asked for: sasl_mechanism, or PLAIN when only a user name
// is given, as with sarama.
func (c *SASLConfig) saslMechanism() string {
	m := strings.ToUpper(c.SASLMechanism)
	if m == "" && c.SASLUsername.IsSet() {
		return "PLAIN"
	}
	return m
}

func (c *SASLConfig) validate() []error {
	var errs []error
	switch m := c.saslMechanism(); m {
	case "":
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
		if !c.SASLUsername.IsSet() {
			errs = append(errs, morse.Errorf("sasl_username", "%s needs a user name", m))
		}
	case "OAUTHBEARER":
		if !c.SASLAccessToken.IsSet() {
			errs = append(errs, morse.Errorf("sasl_access_token", "OAUTHBEARER needs a token"))
		}
	case "GSSAPI", "AWS-MSK-IAM":
		errs = append(errs, morse.Errorf("sasl_mechanism", "%s is not supported; use PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER", m))
	default:
		errs = append(errs, morse.Errorf("sasl_mechanism", "unknown mechanism %q; use PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER", c.SASLMechanism))
	}
	if v := c.SASLVersion; v != nil && *v != 0 && *v != 1 {
		errs = append(errs, morse.Errorf("sasl_version", "must be 0 or 1, got %d", *v))
	}
	return errs
}

// mechanism builds the SASL mechanism; nil when SASL is off.
func (c *SASLConfig) mechanism() (sasl.Mechanism, error) {
	user, pass := string(c.SASLUsername), string(c.SASLPassword)
	switch m := c.saslMechanism(); m {
	case "":
		return nil, nil
	case "PLAIN":
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), nil
	case "OAUTHBEARER":
		auth := oauth.Auth{Token: string(c.SASLAccessToken), Extensions: c.SASLExtensions}
		return oauth.Oauth(func(context.Context) (oauth.Auth, error) { return auth, nil }), nil
	default:
		return nil, fmt.Errorf("kafka: sasl_mechanism %q is not supported", m)
	}
}
