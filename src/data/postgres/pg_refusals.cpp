#include "pg_refusals.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <sstream>

#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"

namespace gputrain::data::postgres {
namespace {

bool has(const std::string& message, const char* text) { return message.find(text) != std::string::npos; }

// libpq's certificate checks (sslmode verify-ca or verify-full, sslrootcert, sslcert, sslkey)
// fail after the server answered: it is up, and data.dsn's SSL settings are what to change.
std::optional<std::string> ssl_fix(const std::string& message) {
  const auto says = [&](const char* text) { return has(message, text); };
  if (says("root certificate file") && says("does not exist"))
    return "give the certificate of the authority that signed the server's: sslrootcert=/path/to/ca.crt in data.dsn (or put "
           "it in ~/.postgresql/root.crt), or sslmode=require to encrypt without checking the server";
  if (says("does not match host name"))
    return "connect by a name the server's certificate holds (quoted above) as data.dsn's host, or set sslmode=verify-ca to "
           "check the certificate's signer but not its name";
  if (says("could not read root certificate file") || says("no certificate or crl found"))
    return "sslrootcert must name a PEM file of CA certificates (-----BEGIN CERTIFICATE-----) that this user can read";
  if (says("private key file") || says("could not load private key") || says("could not read certificate file") ||
      says("could not load certificate"))
    return "give the client certificate and its key as data.dsn's sslcert and sslkey: PEM files this user can read, the key "
           "readable by this user alone (chmod 600)";
  if (says("certificate verify failed"))
    return "the server's certificate is not signed by sslrootcert's authority: give the certificate of the one that signed "
           "it, or sslmode=require to encrypt without checking the server";
  if (says("certificate") || says(" alert "))
    return "check data.dsn's sslmode, sslrootcert, sslcert and sslkey against the server's ssl settings (libpq's docs, "
           "\"SSL Support\")";
  return std::nullopt;
}

// The word after `prefix` in `message` ("unsupported startup parameter: options" -> "options").
std::string word_after(const std::string& message, const std::string& prefix) {
  const auto at = message.find(prefix);
  if (at == std::string::npos) return "";
  const auto start = at + prefix.size();
  const auto end = message.find_first_of(" \n\"", start);
  return message.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// A pooler (PgBouncer) passes on the session settings it knows and refuses others, and serves
// only the databases its [databases] section lists: each is data.dsn's to change.
void throw_if_pooler_refused_login(const ConnectFailure& f, const std::string& who) {
  if (const auto setting = word_after(f.message, "unsupported startup parameter: "); !setting.empty())
    throw UsageError("the server for " + who + " refused data.dsn's '" + setting + "' setting: " + f.message +
                         ": it is a connection pooler (PgBouncer), which passes on only the settings it knows",
                     "leave " + setting + " out of data.dsn, or list it in the pooler's ignore_startup_parameters (pgbouncer.ini); " +
                         "a session setting such as statement_timeout can go to the role instead: ALTER ROLE " + f.user +
                         " SET statement_timeout = 0");
  if (const auto database = word_after(f.message, "no such database: "); !database.empty())
    throw UsageError("the connection pooler (PgBouncer) for " + who + " serves no database '" + database + "': " + f.message,
                     "give data.dsn a dbname its pgbouncer.ini lists under [databases] (SHOW DATABASES on its admin console "
                     "names them), or add '" +
                         database + "' there");
}

// libpq's own refusals of data.dsn's settings before or after it reached a server: a service
// no file defines, a session kind (target_session_attrs) no host is, GSSAPI encryption it cannot have.
void throw_if_client_settings_refused(const ConnectFailure& f) {
  const auto shown = "data.dsn " + (f.dsn_shown.empty() ? std::string("(empty: PG* variables)") : f.dsn_shown);
  if (has(f.message, "definition of service") || has(f.message, "service file"))
    throw UsageError(shown + " names a connection service libpq cannot read: " + f.message,
                     "define it as a [name] section with host, port and dbname in ~/.pg_service.conf (or the file "
                     "PGSERVICEFILE names), or write those in data.dsn instead of service=");
  if (has(f.message, "hot standby mode") || has(f.message, "session is read-only") || has(f.message, "session is not read-only"))
    throw EnvironmentError("the PostgreSQL server at " + f.host + ":" + f.port +
                               " is up, but not the kind of server target_session_attrs asks for (" + shown + "): " + f.message,
                           "point data.dsn at such a server (several hosts, host=a,b, are tried in turn: the primary and its "
                           "standbys), or set target_session_attrs=any; training only reads, so a standby serves as well");
  if (has(f.message, "GSSAPI encryption required"))
    throw UsageError(shown + " asks for GSSAPI encryption, which this connection cannot have: " + f.message,
                     "leave gssencmode out of data.dsn, or connect over TCP (host=name, not a socket folder) with a Kerberos "
                     "ticket (kinit) to a server that takes GSSAPI");
}

// The pg_isready that says whether the server accepts connections; one per server data.dsn lists.
std::string readiness_check(const ConnectFailure& f) {
  if (f.tried.size() <= 1)
    return (f.host.empty() ? std::string("`pg_isready`") : "`pg_isready -h " + f.host + " -p " + f.port + "`") +
           " says whether it accepts connections";
  std::vector<std::string> checks;
  for (const auto& server : f.tried) {
    const auto colon = server.rfind(':');
    checks.push_back("`pg_isready -h " + server.substr(0, colon) + " -p " + server.substr(colon + 1) + "`");
  }
  return core::join(checks) + " say whether they accept connections";
}

// The three refusals a server's code or its English words tell alike.
[[noreturn]] void throw_login_refused(const ConnectFailure& f, const std::string& who) {
  throw UsageError("PostgreSQL refused the login of " + who + ": " + f.message,
                   "check the user and database in data.dsn, and the password: give it in ~/.pgpass or PGPASSWORD, never in the config");
}
[[noreturn]] void throw_full(const ConnectFailure& f, const std::string& who, const std::string& pooler_limit) {
  throw EnvironmentError("the PostgreSQL server for " + who + " is up, but takes no more connections: " + f.message,
                         "run again once other sessions have ended (pg_stat_activity lists them), or raise the limit named "
                         "above: max_connections, the role's or database's CONNECTION LIMIT" +
                             pooler_limit);
}
[[noreturn]] void throw_not_now(const ConnectFailure& f, const std::string& who, const std::string& ready) {
  throw EnvironmentError("the PostgreSQL server for " + who + " takes no connections now: " + f.message, "run again once it is up" + ready);
}

// The setting of data.dsn's options (-c name=value, -cname=value, --name=value) that `message`
// names, as the server quotes it in any language; "" for none.
std::string option_named(const ConnectFailure& f) {
  std::istringstream words(f.options);
  std::string word, name;
  for (bool after_c = false; words >> word; after_c = word == "-c") {
    auto setting = after_c ? word : word.rfind("--", 0) == 0 ? word.substr(2) : word.rfind("-c", 0) == 0 ? word.substr(2) : "";
    setting = setting.substr(0, setting.find('='));
    if (!setting.empty() && has(f.message, ("\"" + setting + "\"").c_str())) return setting;
    if (!setting.empty() && has(f.message, setting.c_str())) name = setting;
  }
  return name;
}

// A server's refusal told by its SQLSTATE, the same whatever language it answers in (lc_messages):
// the words below are matched only for a server, or a pooler, that gave none.
void throw_if_refused_by_state(const ConnectFailure& f, const std::string& who) {
  const auto& state = f.state;
  const auto in_class = [&](const char* code_class) { return state.rfind(code_class, 0) == 0; };
  if (state.empty() || state == "08P01") return;  // none, or a pooler's own (its words are English)
  if (const auto setting = option_named(f);
      !setting.empty() && (state == "22023" || state == "22P02" || state == "42704" || state == "42501" || state == "55P02"))
    throw UsageError("the PostgreSQL server for " + who + " refused data.dsn's options setting '" + setting + "': " + f.message,
                     "correct or leave out " + setting + " in data.dsn's options ('-c name=value'): psql's SHOW " + setting +
                         " gives its form, and some settings (lc_messages, and those the server sets at its start) a user "
                         "cannot set");
  if (state == "42501")
    throw UsageError(
        "PostgreSQL refused the login of " + who + " to database '" + f.database + "', which it may not connect to: " + f.message,
        "GRANT CONNECT ON DATABASE " + f.database + " TO " + f.user + " (as its owner), or give data.dsn a database " + f.user +
            " may connect to");
  if (in_class("28") || state == "3D000") throw_login_refused(f, who);  // a password, role, pg_hba.conf entry, or database
  if (in_class("53")) throw_full(f, who, "");
  if (state == "57P03") throw_not_now(f, who, "; " + readiness_check(f));  // starting up, shutting down, in recovery
  throw EnvironmentError("the PostgreSQL server for " + who + " refused the connection: " + f.message + " (SQLSTATE " + state + ")",
                         "its log says more; run again once the cause is gone");
}

}  // namespace

bool server_answered(const std::string& message) {
  // libpq writes a server's error as "SEVERITY:  text"; its own never hold ":  ".
  return has(message, ":  ");
}

std::string sqlstate_of_verbose(const std::string& message) {
  for (auto at = message.find(":  "); at != std::string::npos; at = message.find(":  ", at + 1)) {
    const auto code = message.substr(at + 3, 6);
    if (code.size() == 6 && code[5] == ':' && std::all_of(code.begin(), code.end() - 1, [](char c) {
          return std::isdigit(static_cast<unsigned char>(c)) || std::isupper(static_cast<unsigned char>(c));
        }))
      return code.substr(0, 5);
  }
  return "";
}

std::vector<std::string> servers_listed(const std::string& hosts, const std::string& ports, const std::string& default_port) {
  const auto split = [](const std::string& list) {
    std::vector<std::string> items;
    std::size_t start = 0;
    for (std::size_t comma; (comma = list.find(',', start)) != std::string::npos; start = comma + 1)
      items.push_back(list.substr(start, comma - start));
    items.push_back(list.substr(start));
    return items;
  };
  const auto host_list = split(hosts), port_list = split(ports);
  std::vector<std::string> servers;
  for (std::size_t i = 0; i < host_list.size(); ++i) {
    auto port = port_list.size() == host_list.size() ? port_list[i] : port_list.front();
    servers.push_back(host_list[i] + ":" + (port.empty() ? default_port : port));
  }
  return servers;
}

void throw_connect_error(const ConnectFailure& f) {
  const auto at = f.tried.size() > 1 ? " at " + core::join(f.tried, " or ") : f.host.empty() ? "" : " at " + f.host + ":" + f.port;
  const auto who =
      "user '" + f.user + "'" + at + " (data.dsn " + (f.dsn_shown.empty() ? std::string("empty: PG* variables") : f.dsn_shown) + ")";
  const auto says = [&](const char* text) { return has(f.message, text); };
  throw_if_client_settings_refused(f);
  // libpq's words for a string it cannot parse, or a value it does not take; not a reply from a
  // server ("received invalid response to SSL negotiation" is something else on that port).
  if (says("connection option") || says("invalid URI") || says("invalid percent-encoded") || says("invalid port number") ||
      says("invalid sslmode value") || says("missing \"=\"") || says("unterminated quoted"))
    throw UsageError("data.dsn is not a libpq connection string: " + f.message,
                     "write it as postgresql://user@host:5432/dbname or 'host=... port=... dbname=... user=...'");
  if (says("server does not support SSL, but SSL was required"))
    throw UsageError("the PostgreSQL server for " + who + " takes no SSL connections, and data.dsn asks for one: " + f.message,
                     "leave sslmode out of data.dsn (libpq's default, prefer, uses SSL where the server offers it), or turn ssl on "
                     "in the server's postgresql.conf");
  if (const auto fix = ssl_fix(f.message))
    throw UsageError("the PostgreSQL server for " + who + " answered, but the SSL connection data.dsn asks for failed: " + f.message, *fix);
  throw_if_pooler_refused_login(f, who);
  throw_if_refused_by_state(f, who);
  if (says("authentication failed") || says("no password supplied") || says("does not exist") || says("not permitted to log in") ||
      says("no pg_hba.conf entry"))
    throw_login_refused(f, who);
  // Up, but full: the server's max_connections, a role's or database's CONNECTION LIMIT, a
  // pooler's max_client_conn. A later run may find room.
  if (says("too many clients") || says("too many connections") || says("connection slots are reserved") ||
      says("no more connections allowed"))
    throw_full(f, who, ", a pooler's max_client_conn");
  const auto ready = readiness_check(f);
  if (says("the database system is")) throw_not_now(f, who, "; " + ready);  // starting up, shutting down, in recovery: 57P03
  if (says("timeout expired"))  // connect_timeout: a dropped SYN and a pooler whose server is down look alike
    throw EnvironmentError("cannot reach PostgreSQL for " + who + " within data.dsn's connect_timeout (10 s unless it says): " + f.message,
                           "start the server, or correct data.dsn's host and port; a firewall that drops the connection, or a "
                           "connection pooler (PgBouncer) whose own server is down, waits the same way: " +
                               ready);
  throw EnvironmentError("cannot reach PostgreSQL for " + who + ": " + f.message,
                         "start the server, or correct data.dsn's host and port; " + ready);
}

void throw_if_pooler_refused(const std::string& message, const std::string& where, const std::string& what) {
  if (has(message, "statement pooling mode"))
    throw UsageError("the connection pooler at " + where + " pools statement by statement (pool_mode = statement), and gputrain " +
                         "reads data.query and data.val_query in one transaction, from one snapshot: " + message,
                     "point data.dsn at a pool in transaction or session mode (pool_mode in pgbouncer.ini, or pool_mode=session on "
                     "its [databases] line), or at the server itself");
  if (has(message, "query_wait_timeout"))
    throw EnvironmentError(
        "the connection pooler at " + where + " found no free server connection for " + what + " within its query_wait_timeout: " + message,
        "nothing was trained; run again when the pool is less busy (SHOW POOLS on its admin console), or raise "
        "its default_pool_size");
}

}  // namespace gputrain::data::postgres
