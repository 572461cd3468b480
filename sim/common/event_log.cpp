#include "sim/common/event_log.h"

#include <array>
#include <type_traits>

#include "sim/common/stable_hash.h"

namespace kvsim {
namespace {

constexpr std::size_t kFieldsReserved = 6;  // most events carry at most this many fields

constexpr std::array<std::pair<EventCategory, std::string_view>, 26> kCategoryNames = {{
    {EventCategory::arrive, "arrive"},       {EventCategory::alloc, "alloc"},
    {EventCategory::preempt, "preempt"},     {EventCategory::promote, "promote"},
    {EventCategory::lookup, "lookup"},       {EventCategory::park, "park"},
    {EventCategory::schedule, "schedule"},   {EventCategory::invalid, "invalid"},
    {EventCategory::finish, "finish"},       {EventCategory::recv_done, "recv_done"},
    {EventCategory::send_done, "send_done"}, {EventCategory::hold, "hold"},
    {EventCategory::free, "free"},           {EventCategory::abort, "abort"},
    {EventCategory::meta, "meta"},           {EventCategory::fault, "fault"},
    {EventCategory::worker, "worker"},       {EventCategory::load, "load"},
    {EventCategory::store, "store"},         {EventCategory::warn, "warn"},
    {EventCategory::p2p, "p2p"},             {EventCategory::crash, "crash"},
    {EventCategory::internal, "internal"},   {EventCategory::violation, "violation"},
    {EventCategory::liveness, "liveness"},
    {EventCategory::reset, "reset"},
}};

static_assert(kCategoryNames.size() == static_cast<std::size_t>(EventCategory::reset) + 1,
              "EventCategories::all() takes reset as the last category");

constexpr std::array<std::pair<FieldKind, std::string_view>, 9> kFieldKindNames = {{
    {FieldKind::integer, "integer"},
    {FieldKind::flag, "flag"},
    {FieldKind::text, "text"},
    {FieldKind::request, "request"},
    {FieldKind::status, "status"},
    {FieldKind::blocks, "blocks"},
    {FieldKind::block_groups, "block_groups"},
    {FieldKind::requests, "requests"},
    {FieldKind::request_counts, "request_counts"},
}};

void render_value(const Field& field, std::string_view separator, std::string& out) {
    switch (field.kind) {
        case FieldKind::integer:
        case FieldKind::flag: out += fmt::format("{}", std::get<std::int64_t>(field.value)); return;
        case FieldKind::text:
        case FieldKind::request:
        case FieldKind::status: out += std::get<std::string>(field.value); return;
        case FieldKind::blocks: out += format_blocks(std::get<IdList>(field.value)); return;
        case FieldKind::requests: out += format_blocks(std::get<NameList>(field.value)); return;
        case FieldKind::block_groups: {
            const auto& groups = std::get<GroupList>(field.value);
            if (groups.empty()) out += "()";
            for (std::size_t g = 0; g < groups.size(); ++g) {
                if (g > 0) out += separator;
                out += format_blocks(groups[g]);
            }
            return;
        }
        case FieldKind::request_counts: {
            bool first = true;
            for (const auto& [id, n] : std::get<CountList>(field.value)) {
                out += fmt::format("{}{}:{}", first ? "" : ",", id, n);
                first = false;
            }
            return;
        }
    }
}

}  // namespace

std::string_view to_string(EventCategory category) {
    for (const auto& [c, name] : kCategoryNames)
        if (c == category) return name;
    return "?";
}

std::optional<EventCategory> parse_event_category(std::string_view text) {
    for (const auto& [c, name] : kCategoryNames)
        if (name == text) return c;
    return std::nullopt;
}

std::string_view to_string(FieldKind kind) {
    for (const auto& [k, name] : kFieldKindNames)
        if (k == kind) return name;
    return "?";
}

const Field* LogEvent::field(std::string_view key) const {
    for (const Field& f : fields)
        if (f.key == key) return &f;
    return nullptr;
}

std::string_view LogEvent::text(std::string_view key) const {
    const Field* f = field(key);
    if (f == nullptr) return {};
    const auto* s = std::get_if<std::string>(&f->value);
    return s != nullptr ? std::string_view(*s) : std::string_view{};
}

std::optional<std::int64_t> LogEvent::integer(std::string_view key) const {
    const Field* f = field(key);
    if (f == nullptr) return std::nullopt;
    const auto* v = std::get_if<std::int64_t>(&f->value);
    return v != nullptr ? std::optional(*v) : std::nullopt;
}

// A placeholder naming no field is left as written, so a mistake shows in the text.
std::string render_text(const LogEvent& event) {
    const std::string_view format = event.format;
    std::string out;
    std::size_t at = 0;
    while (at < format.size()) {
        const auto open = format.find('{', at);
        const auto close = open == std::string_view::npos ? open : format.find('}', open);
        if (close == std::string_view::npos) {
            out.append(format.substr(at));
            break;
        }
        out.append(format.substr(at, open - at));
        const std::string_view spec = format.substr(open + 1, close - open - 1);
        const auto colon = spec.find(':');
        const Field* field = event.field(spec.substr(0, colon));
        if (field == nullptr)
            out.append(format.substr(open, close - open + 1));
        else
            render_value(*field, colon == std::string_view::npos ? "" : spec.substr(colon + 1), out);
        at = close + 1;
    }
    return out;
}

std::string render_line(const LogEvent& event) {
    return fmt::format("{:>5} {:<9} {}\n", event.step, to_string(event.category), render_text(event));
}

EventBuilder::EventBuilder(EventLog* log, EventCategory category, std::string_view format) : log_(log) {
    if (log != nullptr && !log->keeps(category)) {
        mode_ = log->fingerprinting() ? Mode::fold : Mode::discard;
        if (mode_ == Mode::fold) fold_.start(category, format);
        return;
    }
    event_.category = category;
    event_.format = format;
    event_.fields.reserve(kFieldsReserved);
}

EventBuilder::~EventBuilder() {
    if (log_ == nullptr) return;
    if (mode_ == Mode::build) log_->append(std::move(event_));
    if (mode_ == Mode::fold) log_->fold(fold_.hash);
}

void EventFold::value(const FieldValue& value) {
    std::visit(
        [&](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::int64_t>) integer(v);
            else if constexpr (std::is_same_v<T, std::string>) text(v);
            else if constexpr (std::is_same_v<T, IdList>) ids(v);
            else if constexpr (std::is_same_v<T, NameList>) names(v);
            else if constexpr (std::is_same_v<T, GroupList>) groups(v);
            else counts(v);
        },
        value);
}

std::uint64_t events_fingerprint(const std::vector<LogEvent>& events) {
    EventLog log;
    log.mute({}, true);
    for (const LogEvent& e : events) {
        log.set_step(e.step);
        log.append(e);
    }
    return log.fingerprint();
}

std::uint64_t fold_event(const LogEvent& event) {
    EventFold fold;
    fold.start(event.category, event.format);
    for (const Field& f : event.fields) fold.value(f.value);
    return fold.hash;
}

EventBuilder& EventBuilder::add(std::string_view key, FieldKind kind, FieldValue value) {
    event_.fields.push_back(Field{.key = key, .kind = kind, .value = std::move(value)});
    return *this;
}

void EventLog::append(LogEvent event) {
    if (fingerprinting_) fold(fold_event(event));
    if (!keeps(event.category)) return;
    event.step = step_;
    events_.push_back(std::move(event));
}

void EventLog::render_pending() const {
    for (; rendered_ < events_.size(); ++rendered_) {
        const std::string line = render_line(events_[rendered_]);
        digest_ = fnv1a(line, digest_);
        text_ += line;
    }
}

const std::string& EventLog::text() const {
    render_pending();
    return text_;
}

std::uint64_t EventLog::digest() const {
    render_pending();
    return digest_;
}

std::vector<LogEvent> EventLog::take_events() {
    std::vector<LogEvent> taken = std::move(events_);
    events_.clear();
    text_.clear();
    digest_ = kDigestSeed;
    rendered_ = 0;
    return taken;
}

}  // namespace kvsim
