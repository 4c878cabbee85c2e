// TLS end to end: the HTTP server with material from auth/pki, and a Beast TLS client that
// verifies the serving certificate and optionally presents a client certificate.
#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "server/auth/pki.h"
#include "server/http/http_server.h"

namespace draplane::server::http {
namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = boost::asio::ip::tcp;

struct Fixture {
  Clock& clock = RealClock();  // the certificates must be valid now for OpenSSL to accept them
  auth::CertificateAndKey ca;
  auth::CertificateAndKey serving;
  std::unique_ptr<HttpServer> server;

  Fixture() {
    ca = auth::CreateCertificateAuthority("test-ca", clock).value();
    auth::CertificateRequest request;
    request.common_name = "server";
    request.ip_addresses = {"127.0.0.1"};
    request.server_auth = true;
    serving = auth::IssueCertificate(ca, request, clock).value();
    HttpServerOptions options;
    options.io_threads = 1;
    options.tls = TlsOptions{serving.certificate_pem, serving.private_key_pem, ca.certificate_pem};
    options.protocol_error = [](int status, std::string message) {
      return Response{.status = status, .headers = {}, .body = message};
    };
    server = HttpServer::Start(options, [](Request request, std::shared_ptr<Exchange> exchange) {
               std::string who = request.client_certificate_rejected ? "rejected" : "anonymous";
               if (request.client_certificate) {
                 who = request.client_certificate->common_name;
                 for (const std::string& org : request.client_certificate->organizations) {
                   who += "|" + org;
                 }
               }
               exchange->Respond(Response{.status = 200, .headers = {}, .body = who});
             }).value();
  }

  struct Reply {
    std::string body;  // the response's body, "handshake failed" or "read failed: ..."
    bool resumed = false;
    // The connection's session after the response was read (TLS 1.3 sends its tickets after
    // the handshake, so only then is there a session to resume).
    std::unique_ptr<SSL_SESSION, decltype(&SSL_SESSION_free)> session{nullptr, SSL_SESSION_free};
  };

  // Performs one GET over TLS, resuming `resume` when given, at most `max_version` (an OpenSSL
  // TLS1_x_VERSION, 0 for the newest).
  Reply Fetch(const auth::CertificateAndKey* client_cert, SSL_SESSION* resume = nullptr,
              int max_version = 0) {
    Reply reply;
    net::io_context ioc;
    ssl::context ctx(ssl::context::tls_client);
    ctx.add_certificate_authority(net::buffer(ca.certificate_pem));
    ctx.set_verify_mode(ssl::verify_peer);
    if (max_version != 0) SSL_CTX_set_max_proto_version(ctx.native_handle(), max_version);
    if (client_cert != nullptr) {
      ctx.use_certificate_chain(net::buffer(client_cert->certificate_pem));
      ctx.use_private_key(net::buffer(client_cert->private_key_pem), ssl::context::pem);
    }
    beast::ssl_stream<beast::tcp_stream> stream(ioc, ctx);
    if (resume != nullptr) SSL_set_session(stream.native_handle(), resume);
    beast::get_lowest_layer(stream).connect(
        tcp::endpoint(net::ip::make_address("127.0.0.1"), server->port()));
    beast::error_code ec;
    stream.handshake(ssl::stream_base::client, ec);
    if (ec) {
      reply.body = "handshake failed";
      return reply;
    }
    reply.resumed = SSL_session_reused(stream.native_handle()) == 1;
    bhttp::request<bhttp::empty_body> request{bhttp::verb::get, "/", 11};
    bhttp::write(stream, request, ec);
    beast::flat_buffer buffer;
    bhttp::response<bhttp::string_body> response;
    bhttp::read(stream, buffer, response, ec);
    if (ec) {
      reply.body = "read failed: " + ec.message();
      return reply;
    }
    reply.body = response.body();
    reply.session.reset(SSL_get1_session(stream.native_handle()));
    // The connection ends as if closed cleanly: OpenSSL marks the session of a connection freed
    // without a shutdown as not resumable.
    SSL_set_shutdown(stream.native_handle(), SSL_SENT_SHUTDOWN);
    return reply;
  }

  std::string Get(const auth::CertificateAndKey* client_cert) { return Fetch(client_cert).body; }

  auth::CertificateAndKey ClientCertificate(const std::string& name) {
    auth::CertificateRequest request;
    request.common_name = name;
    request.organizations = {"system:nodes"};
    request.client_auth = true;
    return auth::IssueCertificate(ca, request, clock).value();
  }
};

TEST(TlsTest, ServesWithoutClientCertificate) {
  Fixture f;
  EXPECT_EQ(f.Get(nullptr), "anonymous");
}

TEST(TlsTest, PassesVerifiedClientIdentity) {
  Fixture f;
  auth::CertificateRequest request;
  request.common_name = "system:node:n1";
  request.organizations = {"system:nodes", "extra"};
  request.client_auth = true;
  auth::CertificateAndKey client = auth::IssueCertificate(f.ca, request, f.clock).value();
  EXPECT_EQ(f.Get(&client), "system:node:n1|system:nodes|extra");
}

// A certificate that does not verify gives no identity, but the handshake completes and the
// request says the certificate was rejected (the API server answers it 401, upstream's
// RequestClientCert behaviour, instead of a TLS alert a client cannot read).
TEST(TlsTest, RejectsClientCertificateFromAnotherCa) {
  Fixture f;
  auth::CertificateAndKey other_ca = auth::CreateCertificateAuthority("other", f.clock).value();
  auth::CertificateRequest request;
  request.common_name = "mallory";
  request.organizations = {"system:masters"};
  request.client_auth = true;
  auth::CertificateAndKey client = auth::IssueCertificate(other_ca, request, f.clock).value();
  EXPECT_EQ(f.Get(&client), "rejected");
}

TEST(TlsTest, RejectsAClientCertificateNotForClientAuthentication) {
  Fixture f;
  auth::CertificateRequest request;
  request.common_name = "system:node:n1";
  request.server_auth = true;  // serverAuth only
  auth::CertificateAndKey client = auth::IssueCertificate(f.ca, request, f.clock).value();
  EXPECT_EQ(f.Get(&client), "rejected");
}

// A client that resumes its first connection's session on the next ones, as browsers do on the
// connections they open in parallel, while the server asks for client certificates: the
// handshake succeeds, the session is reused, and a resumed session keeps the identity of the
// certificate it was verified with (without a session ID context OpenSSL fails every resumption
// handshake, "session id context uninitialized").
TEST(TlsTest, ResumesSessionsWhileAskingForClientCertificates) {
  Fixture f;
  auth::CertificateAndKey client = f.ClientCertificate("system:node:n1");
  for (int max_version : {0, TLS1_2_VERSION}) {
    SCOPED_TRACE(max_version == 0 ? "TLS 1.3" : "TLS 1.2");
    for (const auth::CertificateAndKey* cert : {&client, static_cast<decltype(&client)>(nullptr)}) {
      std::string who = cert != nullptr ? "system:node:n1|system:nodes" : "anonymous";
      Fixture::Reply first = f.Fetch(cert, nullptr, max_version);
      ASSERT_EQ(first.body, who);
      EXPECT_FALSE(first.resumed);
      ASSERT_NE(first.session, nullptr);
      ASSERT_EQ(SSL_SESSION_is_resumable(first.session.get()), 1);
      Fixture::Reply again = f.Fetch(cert, first.session.get(), max_version);
      EXPECT_EQ(again.body, who);
      EXPECT_TRUE(again.resumed) << "the session of the first connection was not reused";
    }
  }
}

}  // namespace
}  // namespace draplane::server::http
