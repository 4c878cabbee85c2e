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
               std::string who = "anonymous";
               if (request.client_certificate) {
                 who = request.client_certificate->common_name;
                 for (const std::string& org : request.client_certificate->organizations) {
                   who += "|" + org;
                 }
               }
               exchange->Respond(Response{.status = 200, .headers = {}, .body = who});
             }).value();
  }

  // Performs one GET over TLS; returns the body or "handshake failed".
  std::string Get(const auth::CertificateAndKey* client_cert) {
    net::io_context ioc;
    ssl::context ctx(ssl::context::tls_client);
    ctx.add_certificate_authority(net::buffer(ca.certificate_pem));
    ctx.set_verify_mode(ssl::verify_peer);
    if (client_cert != nullptr) {
      ctx.use_certificate_chain(net::buffer(client_cert->certificate_pem));
      ctx.use_private_key(net::buffer(client_cert->private_key_pem), ssl::context::pem);
    }
    beast::ssl_stream<beast::tcp_stream> stream(ioc, ctx);
    beast::get_lowest_layer(stream).connect(
        tcp::endpoint(net::ip::make_address("127.0.0.1"), server->port()));
    beast::error_code ec;
    stream.handshake(ssl::stream_base::client, ec);
    if (ec) return "handshake failed";
    bhttp::request<bhttp::empty_body> request{bhttp::verb::get, "/", 11};
    bhttp::write(stream, request, ec);
    beast::flat_buffer buffer;
    bhttp::response<bhttp::string_body> response;
    bhttp::read(stream, buffer, response, ec);
    if (ec) return "read failed: " + ec.message();
    return response.body();
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

TEST(TlsTest, RejectsClientCertificateFromAnotherCa) {
  Fixture f;
  auth::CertificateAndKey other_ca = auth::CreateCertificateAuthority("other", f.clock).value();
  auth::CertificateRequest request;
  request.common_name = "mallory";
  request.organizations = {"system:masters"};
  request.client_auth = true;
  auth::CertificateAndKey client = auth::IssueCertificate(other_ca, request, f.clock).value();
  std::string result = f.Get(&client);
  EXPECT_TRUE(result == "handshake failed" || result.rfind("read failed", 0) == 0) << result;
}

}  // namespace
}  // namespace draplane::server::http
