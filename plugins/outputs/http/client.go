package http

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/morse-agent/morse/plugins/common/httpout"
)

// newClient builds the client of the client keys and local_address, and, with OAuth2's keys,
// one that puts a bearer token on each request, fetched through the same transport (TLS,
// proxy) and renewed when it expires, as Telegraf's does. The bound of a request is set per
// request (send), not on the client.
func (o *HTTP) newClient() (*http.Client, error) {
	c := o.ClientConfig
	tlsCfg, err := c.TLSConfig()
	if err != nil {
		return nil, err
	}
	opts := httpout.Options{
		TLS:                   tlsCfg,
		NoEnvironmentProxy:    !c.UseSystemProxy,
		LocalAddress:          o.LocalAddress,
		IdleConnTimeout:       time.Duration(c.IdleConnTimeout),
		MaxIdleConns:          c.MaxIdleConns,
		MaxIdleConnsPerHost:   c.MaxIdleConnsPerHost,
		ResponseHeaderTimeout: time.Duration(c.ResponseHeaderTimeout),
	}
	if !c.UseSystemProxy {
		opts.Proxy = c.HTTPProxyURL
	}
	tr, err := httpout.NewTransport(opts)
	if err != nil {
		return nil, err
	}
	if !o.OAuth2.enabled() {
		return &http.Client{Transport: tr}, nil
	}
	cc := clientcredentials.Config{
		ClientID: o.ClientID, ClientSecret: string(o.ClientSecret), TokenURL: o.TokenURL,
		Scopes: o.Scopes, EndpointParams: url.Values{},
	}
	if o.Audience != "" {
		cc.EndpointParams.Set("audience", o.Audience)
	}
	// The token source keeps this context for every token request it makes; the client in
	// it bounds each one by timeout.
	tokenClient := &http.Client{Transport: tr, Timeout: o.timeout()}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, tokenClient)
	return &http.Client{Transport: &oauth2.Transport{Source: cc.TokenSource(ctx), Base: tr}}, nil
}

// timeout is timeout, or Telegraf's 5 s when it is 0.
func (o *HTTP) timeout() time.Duration {
	if o.Timeout <= 0 {
		return DefaultTimeout
	}
	return time.Duration(o.Timeout)
}
