#include "storage/rows.h"

#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <type_traits>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "core/base/status_macros.h"
#include "core/model/node_resources.h"

namespace accelsched {
namespace {

// --- Columns: one field of a record, both directions side by side. ---

template <typename R>
struct Column {
  const char* name;
  // The field as the column's value.
  std::function<SqlValue(const R&)> write;
  // Sets the field from column `col` of `row`.
  std::function<absl::Status(RowReader& row, int col, R&)> read;
  // Set: the column is read from this expression (a joined table's column)
  // and never written to the table.
  const char* joined = nullptr;
};

template <typename R>
Column<R> Text(const char* name, std::string R::*field) {
  return {name, [field](const R& r) -> SqlValue { return r.*field; },
          [field](RowReader& row, int col, R& r) -> absl::Status {
            r.*field = row.Text(col);
            return absl::OkStatus();
          }};
}

// An optional foreign key: empty is NULL, and NULL reads as empty.
template <typename R>
Column<R> TextOrNull(const char* name, std::string R::*field) {
  return {name,
          [field](const R& r) -> SqlValue {
            if ((r.*field).empty()) return std::monostate();
            return r.*field;
          },
          [field](RowReader& row, int col, R& r) -> absl::Status {
            r.*field = row.Text(col);
            return absl::OkStatus();
          }};
}

// A text column of a joined table, read only.
template <typename R>
Column<R> Joined(const char* expression, std::string R::*field) {
  Column<R> c = Text(expression, field);
  c.write = nullptr;
  c.joined = expression;
  return c;
}

// An integer, or an enum by its number.
template <typename R, typename T>
Column<R> Integer(const char* name, T R::*field) {
  return {name,
          [field](const R& r) -> SqlValue {
            return static_cast<int64_t>(r.*field);
          },
          [field](RowReader& row, int col, R& r) -> absl::Status {
            ASSIGN_OR_RETURN(const int64_t v, row.Int(col));
            r.*field = static_cast<T>(v);
            return absl::OkStatus();
          }};
}

template <typename R>
Column<R> Flag(const char* name, bool R::*field) {
  return {name, [field](const R& r) -> SqlValue { return r.*field; },
          [field](RowReader& row, int col, R& r) -> absl::Status {
            r.*field = row.Bool(col);
            return absl::OkStatus();
          }};
}

// Unix nanoseconds.
template <typename R>
Column<R> Time(const char* name, absl::Time R::*field) {
  return {
      name,
      [field](const R& r) -> SqlValue { return absl::ToUnixNanos(r.*field); },
      [field](RowReader& row, int col, R& r) -> absl::Status {
        ASSIGN_OR_RETURN(const int64_t v, row.Int(col));
        r.*field = absl::FromUnixNanos(v);
        return absl::OkStatus();
      }};
}

// Nanoseconds.
template <typename R>
Column<R> Duration(const char* name, absl::Duration R::*field) {
  return {name,
          [field](const R& r) -> SqlValue {
            return absl::ToInt64Nanoseconds(r.*field);
          },
          [field](RowReader& row, int col, R& r) -> absl::Status {
            ASSIGN_OR_RETURN(const int64_t v, row.Int(col));
            r.*field = absl::Nanoseconds(v);
            return absl::OkStatus();
          }};
}

// Names (which hold no ",") joined by ","; empty: none.
template <typename R>
Column<R> NameList(const char* name, std::vector<std::string> R::*field) {
  return {
      name,
      [field](const R& r) -> SqlValue { return absl::StrJoin(r.*field, ","); },
      [field](RowReader& row, int col, R& r) -> absl::Status {
        r.*field = absl::StrSplit(row.Text(col), ',', absl::SkipEmpty());
        return absl::OkStatus();
      }};
}

// An optional value of integer members in nullable integer columns, one per
// member (`names[i]` holds `members[i]`): absent is NULL in all of them, so
// that a present value of zeros stays present. The first column says whether
// the value is present; a row whose others disagree with it was not written
// by this mapping, and its read is INTERNAL, naming both columns.
template <typename R, typename V, size_t N>
std::vector<Column<R>> OptionalColumns(std::optional<V> R::*field,
                                       const char* const (&names)[N],
                                       int64_t V::*const (&members)[N]) {
  const char* const first_name = names[0];
  std::vector<Column<R>> columns;
  for (size_t i = 0; i < N; ++i) {
    const char* const name = names[i];
    int64_t V::*const member = members[i];
    auto write = [field, member](const R& r) -> SqlValue {
      if (!(r.*field).has_value()) return std::monostate();
      return *(r.*field).*member;
    };
    auto read = [field, member, first = i == 0, name, first_name](
                    RowReader& row, int col, R& r) -> absl::Status {
      std::optional<V>& value = r.*field;
      const bool null = row.IsNull(col);
      if (first) {
        value.reset();
        if (null) return absl::OkStatus();
        value.emplace();
      } else if (null == value.has_value()) {
        return absl::InternalError(absl::StrCat(
            "column ", name, " is ", null ? "" : "not ", "NULL but ",
            first_name, " is ", null ? "not " : "", "NULL"));
      }
      if (null) return absl::OkStatus();
      ASSIGN_OR_RETURN(const int64_t v, row.Int(col));
      *value.*member = v;
      return absl::OkStatus();
    };
    columns.push_back({name, write, read});
  }
  return columns;
}

// An optional NodeResources in three columns named for its cpu_milli,
// memory_bytes and pods.
template <typename R>
std::vector<Column<R>> OptionalResources(std::optional<NodeResources> R::*field,
                                         const char* cpu_milli,
                                         const char* memory_bytes,
                                         const char* pods) {
  static constexpr int64_t NodeResources::*kMembers[] = {
      &NodeResources::cpu_milli, &NodeResources::memory_bytes,
      &NodeResources::pods};
  const char* const names[] = {cpu_milli, memory_bytes, pods};
  return OptionalColumns(field, names, kMembers);
}

// An optional GpuShare in three columns named for its compute_milli,
// memory_bytes and group; group is NULL exactly when the others are (INTERNAL
// naming both columns otherwise).
template <typename R>
std::vector<Column<R>> OptionalShare(std::optional<GpuShare> R::*field,
                                     const char* compute_milli,
                                     const char* memory_bytes,
                                     const char* group) {
  static constexpr int64_t GpuShare::*kMembers[] = {&GpuShare::compute_milli,
                                                    &GpuShare::memory_bytes};
  const char* const names[] = {compute_milli, memory_bytes};
  std::vector<Column<R>> columns = OptionalColumns(field, names, kMembers);
  auto write = [field](const R& r) -> SqlValue {
    if (!(r.*field).has_value()) return std::monostate();
    return (r.*field)->group;
  };
  // After the others: the value is present or absent by then.
  auto read = [field, group, compute_milli](RowReader& row, int col,
                                            R& r) -> absl::Status {
    std::optional<GpuShare>& value = r.*field;
    const bool null = row.IsNull(col);
    if (null == value.has_value()) {
      return absl::InternalError(absl::StrCat(
          "column ", group, " is ", null ? "" : "not ", "NULL but ",
          compute_milli, " is ", null ? "not " : "", "NULL"));
    }
    if (!null) value->group = row.Text(col);
    return absl::OkStatus();
  };
  columns.push_back({group, write, read});
  return columns;
}

// One column of a device's optional MIG plan: NULL when it has none. The
// first such column read (mig_plan_generation) decides whether the plan is
// present; a later one that disagrees is INTERNAL, naming it.
Column<Device> MigPlanColumn(
    const char* name,
    std::function<absl::Status(MigPlan&, RowReader&, int)> read_field,
    std::function<SqlValue(const MigPlan&)> write_field) {
  const bool first = absl::string_view(name) == "mig_plan_generation";
  return {
      name,
      [write_field](const Device& d) -> SqlValue {
        if (!d.mig_plan.has_value()) return std::monostate();
        return write_field(*d.mig_plan);
      },
      [read_field, first, name](RowReader& row, int col,
                                Device& d) -> absl::Status {
        const bool null = row.IsNull(col);
        if (first) {
          d.mig_plan.reset();
          if (!null) d.mig_plan.emplace();
        } else if (null == d.mig_plan.has_value()) {
          return absl::InternalError(absl::StrCat(
              "column ", name, " is ", null ? "" : "not ",
              "NULL but mig_plan_generation is ", null ? "not " : "", "NULL"));
        }
        if (null) return absl::OkStatus();
        return read_field(*d.mig_plan, row, col);
      }};
}

// `columns`, then `more`.
template <typename R>
std::vector<Column<R>> Columns(std::vector<Column<R>> columns,
                               std::vector<Column<R>> more) {
  for (Column<R>& c : more) columns.push_back(std::move(c));
  return columns;
}

// --- Tables. ---

// The rows of one kind of record. A child table's rows name their parent
// (`parent`: the node, device or allocation they belong to) and, when
// `positioned`, their index in the parent's list, in a `position` column:
// SELECT reads the parent as column 0, then the record's columns; INSERT
// writes the parent, the record's columns and the position.
template <typename R>
struct Table {
  const char* name;
  const char* parent = nullptr;
  std::vector<Column<R>> columns;
  bool positioned = false;
  // The order of a load, after the parent and the position; the dialect
  // adds what breaks the ties left (`insertion_breaks_ties`).
  std::vector<const char*> order_by = {};
  // Rows written before their table had positions share one; SQLite returns
  // those in the order inserted (its rowid).
  bool insertion_breaks_ties = false;
  // A join for the `joined` columns: "d LEFT JOIN ...", `d` qualifying the
  // table's own columns in the SELECT.
  const char* alias = nullptr;
  const char* join = nullptr;
};

struct KeyValue {
  std::string key;
  std::string value;
};

struct UnitRow {
  std::string unit;
  bool live = false;
};

struct SpellingRow {
  std::string spelling;
};

// The tables, in the order of storage/migrations.cc. To add a field: one
// column here, and one migration in each schema.
const Table<Node>& NodesTable() {
  static const auto* const table = new Table<Node>{
      "nodes", nullptr,
      Columns<Node>(
          {Text("name", &Node::name), Flag("schedulable", &Node::schedulable),
           Time("last_heartbeat_unix_ns", &Node::last_heartbeat)},
          OptionalResources(&Node::allocatable, "allocatable_cpu_milli",
                            "allocatable_memory_bytes", "allocatable_pods"))};
  return *table;
}

// What PutNodeMutation writes over a stored node's row: all but its name.
// PutNodeStatusMutation writes only the first two.
constexpr const char* kNodeReplacedColumns[] = {
    "schedulable", "last_heartbeat_unix_ns", "allocatable_cpu_milli",
    "allocatable_memory_bytes", "allocatable_pods"};

const Table<KeyValue>& NodeLabelsTable() {
  static const auto* const table = new Table<KeyValue>{
      "node_labels",
      "node",
      {Text("key", &KeyValue::key), Text("value", &KeyValue::value)}};
  return *table;
}

// A TPU slice's row, written from any of its chips.
const Table<Device>& TpuSlicesTable() {
  static const auto* const table =
      new Table<Device>{"tpu_slices",
                        nullptr,
                        {Text("id", &Device::tpu_slice_id),
                         Text("model", &Device::canonical_model),
                         Text("topology", &Device::tpu_topology)}};
  return *table;
}

const Table<Device>& DevicesTable() {
  static const auto* const table = new Table<Device>{
      "devices",
      "node",
      {Text("id", &Device::id), Integer("device_index", &Device::index),
       Integer("device_class", &Device::device_class),
       Text("model", &Device::model),
       Integer("memory_bytes", &Device::memory_bytes),
       Flag("healthy", &Device::healthy),
       Flag("mig_enabled", &Device::mig_enabled),
       TextOrNull("tpu_slice_id", &Device::tpu_slice_id),
       Flag("removed", &Device::removed), Integer("sharing", &Device::sharing),
       Integer("mig_generation", &Device::mig_generation),
       // The plan's own columns: its slices are in MigPlanSlicesTable.
       MigPlanColumn(
           "mig_plan_generation",
           [](MigPlan& p, RowReader& row, int col) -> absl::Status {
             ASSIGN_OR_RETURN(const int64_t v, row.Int(col));
             p.generation = static_cast<uint64_t>(v);
             return absl::OkStatus();
           },
           [](const MigPlan& p) -> SqlValue {
             return static_cast<int64_t>(p.generation);
           }),
       MigPlanColumn(
           "mig_plan_allocation",
           [](MigPlan& p, RowReader& row, int col) -> absl::Status {
             p.allocation_id = row.Text(col);
             return absl::OkStatus();
           },
           [](const MigPlan& p) -> SqlValue { return p.allocation_id; }),
       MigPlanColumn(
           "mig_plan_deadline_unix_ns",
           [](MigPlan& p, RowReader& row, int col) -> absl::Status {
             ASSIGN_OR_RETURN(const int64_t v, row.Int(col));
             p.deadline = absl::FromUnixNanos(v);
             return absl::OkStatus();
           },
           [](const MigPlan& p) -> SqlValue {
             return absl::ToUnixNanos(p.deadline);
           }),
       Joined("t.topology", &Device::tpu_topology)},
      /*positioned=*/true,
      /*order_by=*/{},
      /*insertion_breaks_ties=*/false,
      /*alias=*/"d",
      /*join=*/"LEFT JOIN tpu_slices t ON t.id = d.tpu_slice_id"};
  return *table;
}

const Table<MigSlice>& MigSlicesTable() {
  static const auto* const table = new Table<MigSlice>{
      "mig_slices",
      "device_id",
      {Text("id", &MigSlice::id), Text("profile", &MigSlice::profile),
       Integer("start_slot", &MigSlice::start)},
      /*positioned=*/true,
      // Slices written before SQLite's schema 3 all have position 0.
      /*order_by=*/{"start_slot"}};
  return *table;
}

// The slices of a GPU's MIG plan (Device::mig_plan), in the plan's order.
const Table<MigSlice>& MigPlanSlicesTable() {
  static const auto* const table = new Table<MigSlice>{
      "mig_plan_slices",
      "device_id",
      {Text("id", &MigSlice::id), Text("profile", &MigSlice::profile),
       Integer("start_slot", &MigSlice::start)},
      /*positioned=*/true};
  return *table;
}

// A device's links to the other devices of its node (Device::links), in the
// order reported. peer_device_id has no foreign key: the peer's row may be
// written after this one.
const Table<DeviceLink>& DeviceLinksTable() {
  static const auto* const table = new Table<DeviceLink>{
      "device_links",
      "device_id",
      {Text("peer_device_id", &DeviceLink::peer_device_id),
       Integer("kind", &DeviceLink::kind),
       Integer("link_count", &DeviceLink::count)},
      /*positioned=*/true};
  return *table;
}

// The columns of an allocation's RequestSpec, one (or one per member of a
// composite value) per field of RequestSpec::ForEachField, named by its
// stored_as (a composite's its prefix and the member's name), typed by the
// field's type; node_selector has its own table.
std::vector<Column<Allocation>> RequestSpecColumns() {
  // Built once (AllocationsTable): the names outlive every table.
  static auto* const names = new std::vector<std::unique_ptr<std::string>>();
  auto name = [](const char* prefix, const char* member) {
    names->push_back(
        std::make_unique<std::string>(absl::StrCat(prefix, "_", member)));
    return names->back()->c_str();
  };
  std::vector<Column<Allocation>> columns;
  RequestSpec::ForEachField([&](const RequestSpec::Field& field,
                                auto member) {
    using T = std::remove_reference_t<decltype(std::declval<RequestSpec>().*
                                               member)>;
    using Member = T Allocation::*;
    const Member m = member;
    const char* column = field.stored_as;
    if constexpr (std::is_same_v<T, std::string>) {
      columns.push_back(Text(column, m));
    } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
      columns.push_back(NameList(column, m));
    } else if constexpr (std::is_same_v<T, bool>) {
      columns.push_back(Flag(column, m));
    } else if constexpr (std::is_same_v<T, absl::Duration>) {
      columns.push_back(Duration(column, m));
    } else if constexpr (std::is_same_v<T, std::optional<NodeResources>>) {
      for (Column<Allocation>& c :
           OptionalResources(m, name(column, "cpu_milli"),
                             name(column, "memory_bytes"), name(column, "pods"))) {
        columns.push_back(std::move(c));
      }
    } else if constexpr (std::is_same_v<T, std::optional<GpuShare>>) {
      for (Column<Allocation>& c :
           OptionalShare(m, name(column, "compute_milli"),
                         name(column, "memory_bytes"), name(column, "group"))) {
        columns.push_back(std::move(c));
      }
    } else if constexpr (std::is_same_v<T, Labels>) {
      // AllocationNodeSelectorTable.
    } else {
      static_assert(std::is_integral_v<T> || std::is_enum_v<T>,
                    "a RequestSpec field of a type rows.cc cannot store");
      columns.push_back(Integer(column, m));
    }
  });
  return columns;
}

const Table<Allocation>& AllocationsTable() {
  static const auto* const table = new Table<Allocation>{
      "allocations", nullptr,
      Columns<Allocation>(
          {Text("id", &Allocation::id),
           Text("request_id", &Allocation::request_id),
           Integer("state", &Allocation::state),
           Text("node", &Allocation::node),
           Text("tenant", &Allocation::tenant),
           Integer("priority", &Allocation::priority),
           Time("created_at_unix_ns", &Allocation::created_at),
           Time("expires_at_unix_ns", &Allocation::expires_at),
           Time("ended_at_unix_ns", &Allocation::ended_at),
           Text("end_reason", &Allocation::end_reason),
           Text("model", &Allocation::model),
           Text("resource_name", &Allocation::resource_name),
           Text("container_name", &Allocation::container_name),
           Time("admitted_at_unix_ns", &Allocation::admitted_at),
           Text("preempted_by", &Allocation::preempted_by)},
          RequestSpecColumns())};
  return *table;
}

// What an update of a stored allocation writes (PutAllocationMutation); the
// rest never changes.
constexpr const char* kAllocationLifeColumns[] = {"state", "expires_at_unix_ns",
                                                  "ended_at_unix_ns",
                                                  "end_reason", "preempted_by"};

const Table<KeyValue>& AllocationNodeSelectorTable() {
  static const auto* const table = new Table<KeyValue>{
      "allocation_node_selector",
      "allocation_id",
      {Text("key", &KeyValue::key), Text("value", &KeyValue::value)}};
  return *table;
}

const Table<PlacementTarget>& AllocationTargetsTable() {
  static const auto* const table = new Table<PlacementTarget>{
      "allocation_targets",
      "allocation_id",
      {Text("node", &PlacementTarget::node),
       Text("hostname", &PlacementTarget::hostname),
       Text("device_label", &PlacementTarget::device_label),
       Text("mig_strategy", &PlacementTarget::mig_strategy)},
      /*positioned=*/true};
  return *table;
}

// Allocation::device_spellings, a row each: a spelling may hold any
// character a list column would need for its separator.
const Table<SpellingRow>& AllocationDeviceSpellingsTable() {
  static const auto* const table =
      new Table<SpellingRow>{"allocation_device_spellings",
                             "allocation_id",
                             {Text("spelling", &SpellingRow::spelling)},
                             /*positioned=*/true};
  return *table;
}

const Table<AllocatedDevice>& AllocationDevicesTable() {
  static const auto* const table = new Table<AllocatedDevice>{
      "allocation_devices", "allocation_id",
      Columns<AllocatedDevice>(
          {Text("node", &AllocatedDevice::node),
           Text("device_id", &AllocatedDevice::device_id),
           Text("mig_slice_id", &AllocatedDevice::mig_slice_id),
           Text("profile", &AllocatedDevice::profile),
           Integer("sharing", &AllocatedDevice::sharing)},
          OptionalShare(&AllocatedDevice::share, "share_compute_milli",
                        "share_memory_bytes", "share_group")),
      /*positioned=*/true};
  return *table;
}

const Table<UnitRow>& AllocationUnitsTable() {
  static const auto* const table = new Table<UnitRow>{
      "allocation_units",
      "allocation_id",
      {Text("unit", &UnitRow::unit), Flag("live", &UnitRow::live)},
      /*positioned=*/true,
      /*order_by=*/{},
      // Units written before SQLite's schema 3 all have position 0.
      /*insertion_breaks_ties=*/true};
  return *table;
}

// --- Statements, generated from the tables. ---

std::string Param(SqlDialect dialect, int i) {
  return absl::StrCat(dialect == SqlDialect::kSqlite ? "?" : "$", i);
}

// The columns an INSERT names, in order: parent, record, position.
template <typename R>
std::vector<std::string> WrittenColumns(const Table<R>& table) {
  std::vector<std::string> names;
  if (table.parent != nullptr) names.push_back(table.parent);
  for (const Column<R>& c : table.columns) {
    if (c.joined == nullptr) names.push_back(c.name);
  }
  if (table.positioned) names.push_back("position");
  return names;
}

// The parameter of column `name` in the table's INSERT.
template <typename R>
std::string ParamOf(SqlDialect dialect, const Table<R>& table,
                    absl::string_view name) {
  const std::vector<std::string> names = WrittenColumns(table);
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return Param(dialect, static_cast<int>(i) + 1);
  }
  // A name not in the table is a mistake in this file, which every test
  // that writes the table would fail on.
  return absl::StrCat("<no column ", name, " in ", table.name, ">");
}

// INSERT INTO t (...) VALUES (...), and with `conflict` an upsert that
// updates `update` from the same parameters.
template <typename R>
std::string InsertSql(SqlDialect dialect, const Table<R>& table,
                      std::vector<const char*> conflict = {},
                      std::vector<const char*> update = {}) {
  const std::vector<std::string> names = WrittenColumns(table);
  std::vector<std::string> params;
  for (size_t i = 0; i < names.size(); ++i) {
    params.push_back(Param(dialect, static_cast<int>(i) + 1));
  }
  std::string sql =
      absl::StrCat("INSERT INTO ", table.name, " (", absl::StrJoin(names, ", "),
                   ") VALUES (", absl::StrJoin(params, ", "), ")");
  if (!conflict.empty()) {
    std::vector<std::string> sets;
    for (const char* c : update) {
      sets.push_back(absl::StrCat(c, " = ", ParamOf(dialect, table, c)));
    }
    absl::StrAppend(&sql, " ON CONFLICT (", absl::StrJoin(conflict, ", "),
                    ") DO UPDATE SET ", absl::StrJoin(sets, ", "));
  }
  return sql;
}

// SELECT parent, record columns FROM t ORDER BY parent, position, ...
template <typename R>
std::string SelectSql(SqlDialect dialect, const Table<R>& table) {
  const std::string qualifier =
      table.alias != nullptr ? absl::StrCat(table.alias, ".") : "";
  std::vector<std::string> select;
  if (table.parent != nullptr) {
    select.push_back(absl::StrCat(qualifier, table.parent));
  }
  for (const Column<R>& c : table.columns) {
    select.push_back(c.joined != nullptr ? c.joined
                                         : absl::StrCat(qualifier, c.name));
  }
  std::vector<std::string> order;
  if (table.positioned) {
    order.push_back(absl::StrCat(qualifier, table.parent));
    order.push_back(absl::StrCat(qualifier, "position"));
    for (const char* c : table.order_by) {
      order.push_back(absl::StrCat(qualifier, c));
    }
    // PostgreSQL's schema began with positions written (pg_schema.cc), so
    // its rows never tie.
    if (table.insertion_breaks_ties && dialect == SqlDialect::kSqlite) {
      order.push_back(absl::StrCat(qualifier, "rowid"));
    }
  }
  std::string sql = absl::StrCat("SELECT ", absl::StrJoin(select, ", "),
                                 " FROM ", table.name);
  if (table.alias != nullptr) absl::StrAppend(&sql, " ", table.alias);
  if (table.join != nullptr) absl::StrAppend(&sql, " ", table.join);
  if (!order.empty()) {
    absl::StrAppend(&sql, " ORDER BY ", absl::StrJoin(order, ", "));
  }
  return sql;
}

// UPDATE t SET set... WHERE where... ; the WHERE's parameters first.
template <typename R>
std::string UpdateSql(SqlDialect dialect, const Table<R>& table,
                      std::vector<const char*> where,
                      std::vector<const char*> set) {
  int next = 1;
  std::vector<std::string> conditions;
  for (const char* c : where) {
    conditions.push_back(absl::StrCat(c, " = ", Param(dialect, next++)));
  }
  std::vector<std::string> sets;
  for (const char* c : set) {
    sets.push_back(absl::StrCat(c, " = ", Param(dialect, next++)));
  }
  return absl::StrCat("UPDATE ", table.name, " SET ", absl::StrJoin(sets, ", "),
                      " WHERE ", absl::StrJoin(conditions, " AND "));
}

template <typename R>
std::string DeleteSql(SqlDialect dialect, const Table<R>& table,
                      const char* where) {
  return absl::StrCat("DELETE FROM ", table.name, " WHERE ", where, " = ",
                      Param(dialect, 1));
}

// Every statement of one dialect.
struct Statements {
  explicit Statements(SqlDialect d);

  std::string select_nodes, upsert_node, update_node_status, delete_node;
  std::string select_labels, delete_labels, insert_label;
  std::string upsert_tpu_slice, delete_orphan_tpu_slices;
  std::string select_devices, delete_devices, insert_device,
      update_device_health;
  std::string select_mig_slices, insert_mig_slice;
  std::string select_mig_plan_slices, insert_mig_plan_slice;
  std::string select_device_links, insert_device_link;
  std::string select_allocations, insert_allocation, update_allocation,
      delete_allocation;
  std::string select_selectors, insert_selector;
  std::string select_targets, insert_target;
  std::string select_spellings, insert_spelling;
  std::string select_allocated_devices, insert_allocated_device;
  std::string select_units, upsert_unit;
  std::string select_event_sequence, update_event_sequence;
};

Statements::Statements(SqlDialect d)
    : select_nodes(SelectSql(d, NodesTable())),
      upsert_node(
          InsertSql(d, NodesTable(), {"name"},
                    std::vector<const char*>(std::begin(kNodeReplacedColumns),
                                             std::end(kNodeReplacedColumns)))),
      update_node_status(UpdateSql(d, NodesTable(), {"name"},
                                   {"schedulable", "last_heartbeat_unix_ns"})),
      delete_node(DeleteSql(d, NodesTable(), "name")),
      select_labels(SelectSql(d, NodeLabelsTable())),
      delete_labels(DeleteSql(d, NodeLabelsTable(), "node")),
      insert_label(InsertSql(d, NodeLabelsTable())),
      upsert_tpu_slice(
          InsertSql(d, TpuSlicesTable(), {"id"}, {"model", "topology"})),
      delete_orphan_tpu_slices(
          "DELETE FROM tpu_slices WHERE id NOT IN (SELECT tpu_slice_id FROM "
          "devices WHERE tpu_slice_id IS NOT NULL)"),
      select_devices(SelectSql(d, DevicesTable())),
      delete_devices(DeleteSql(d, DevicesTable(), "node")),
      insert_device(InsertSql(d, DevicesTable())),
      update_device_health(
          UpdateSql(d, DevicesTable(), {"node", "id"}, {"healthy"})),
      select_mig_slices(SelectSql(d, MigSlicesTable())),
      insert_mig_slice(InsertSql(d, MigSlicesTable())),
      select_mig_plan_slices(SelectSql(d, MigPlanSlicesTable())),
      insert_mig_plan_slice(InsertSql(d, MigPlanSlicesTable())),
      select_device_links(SelectSql(d, DeviceLinksTable())),
      insert_device_link(InsertSql(d, DeviceLinksTable())),
      select_allocations(SelectSql(d, AllocationsTable())),
      insert_allocation(InsertSql(d, AllocationsTable())),
      update_allocation(UpdateSql(
          d, AllocationsTable(), {"id"},
          std::vector<const char*>(std::begin(kAllocationLifeColumns),
                                   std::end(kAllocationLifeColumns)))),
      delete_allocation(DeleteSql(d, AllocationsTable(), "id")),
      select_selectors(SelectSql(d, AllocationNodeSelectorTable())),
      insert_selector(InsertSql(d, AllocationNodeSelectorTable())),
      select_targets(SelectSql(d, AllocationTargetsTable())),
      insert_target(InsertSql(d, AllocationTargetsTable())),
      select_spellings(SelectSql(d, AllocationDeviceSpellingsTable())),
      insert_spelling(InsertSql(d, AllocationDeviceSpellingsTable())),
      select_allocated_devices(SelectSql(d, AllocationDevicesTable())),
      insert_allocated_device(InsertSql(d, AllocationDevicesTable())),
      select_units(SelectSql(d, AllocationUnitsTable())),
      upsert_unit(InsertSql(d, AllocationUnitsTable(),
                            {"allocation_id", "unit"}, {"live"})),
      select_event_sequence("SELECT last FROM event_sequence WHERE id = 1"),
      update_event_sequence(
          absl::StrCat("UPDATE event_sequence SET last = ", Param(d, 1),
                       " WHERE id = 1 AND last <= ", Param(d, 1))) {}

const Statements& StatementsOf(SqlDialect dialect) {
  static const auto* const sqlite = new Statements(SqlDialect::kSqlite);
  static const auto* const postgres = new Statements(SqlDialect::kPostgres);
  return dialect == SqlDialect::kSqlite ? *sqlite : *postgres;
}

// --- Records to rows and back. ---

// The INSERT's parameters: `parent` (for a child table), the record's
// columns, and `position` (for a positioned one).
template <typename R>
std::vector<SqlValue> RowOf(const Table<R>& table, const R& record,
                            const std::string& parent = "",
                            size_t position = 0) {
  std::vector<SqlValue> values;
  values.reserve(table.columns.size() + 2);
  if (table.parent != nullptr) values.push_back(parent);
  for (const Column<R>& c : table.columns) {
    if (c.joined == nullptr) values.push_back(c.write(record));
  }
  if (table.positioned) values.push_back(static_cast<int64_t>(position));
  return values;
}

// The values of the named columns of `record`, in that order.
template <typename R>
std::vector<SqlValue> ValuesOf(const Table<R>& table, const R& record,
                               std::vector<const char*> names) {
  std::vector<SqlValue> values;
  for (const char* name : names) {
    for (const Column<R>& c : table.columns) {
      if (absl::string_view(c.name) == name) values.push_back(c.write(record));
    }
  }
  return values;
}

// Reads a record from a row of SelectSql(table).
template <typename R>
absl::Status ReadRow(const Table<R>& table, RowReader& row, R& record) {
  int col = table.parent != nullptr ? 1 : 0;
  for (const Column<R>& c : table.columns) {
    RETURN_IF_ERROR(c.read(row, col++, record));
  }
  return absl::OkStatus();
}

absl::Status Run(RowWriter& db, const std::string& sql,
                 std::vector<SqlValue> params) {
  return db.Write(sql, std::move(params), absl::OkStatus());
}

absl::Status WriteDevices(const Statements& sql, const Node& node,
                          RowWriter& db) {
  RETURN_IF_ERROR(Run(db, sql.delete_devices, {node.name}));
  for (size_t i = 0; i < node.devices.size(); ++i) {
    const Device& d = node.devices[i];
    if (!d.tpu_slice_id.empty()) {
      RETURN_IF_ERROR(
          Run(db, sql.upsert_tpu_slice, RowOf(TpuSlicesTable(), d)));
    }
    RETURN_IF_ERROR(
        Run(db, sql.insert_device, RowOf(DevicesTable(), d, node.name, i)));
    for (size_t j = 0; j < d.mig_slices.size(); ++j) {
      RETURN_IF_ERROR(Run(db, sql.insert_mig_slice,
                          RowOf(MigSlicesTable(), d.mig_slices[j], d.id, j)));
    }
    for (size_t j = 0; j < d.links.size(); ++j) {
      RETURN_IF_ERROR(Run(db, sql.insert_device_link,
                          RowOf(DeviceLinksTable(), d.links[j], d.id, j)));
    }
    if (d.mig_plan.has_value()) {
      const std::vector<MigSlice>& plan = d.mig_plan->slices;
      for (size_t j = 0; j < plan.size(); ++j) {
        RETURN_IF_ERROR(Run(db, sql.insert_mig_plan_slice,
                            RowOf(MigPlanSlicesTable(), plan[j], d.id, j)));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status Write(const Statements& sql, const PutNodeMutation& m,
                   RowWriter& db) {
  const Node& node = m.node;
  RETURN_IF_ERROR(Run(db, sql.upsert_node, RowOf(NodesTable(), node)));
  RETURN_IF_ERROR(Run(db, sql.delete_labels, {node.name}));
  for (const auto& [key, value] : node.labels) {
    RETURN_IF_ERROR(
        Run(db, sql.insert_label,
            RowOf(NodeLabelsTable(), KeyValue{key, value}, node.name)));
  }
  RETURN_IF_ERROR(WriteDevices(sql, node, db));
  return Run(db, sql.delete_orphan_tpu_slices, {});
}

absl::Status Write(const Statements& sql, const PutNodeStatusMutation& m,
                   RowWriter& db) {
  const Node& node = m.node;
  std::vector<SqlValue> row = {node.name};
  for (SqlValue& v : ValuesOf(NodesTable(), node,
                              {"schedulable", "last_heartbeat_unix_ns"})) {
    row.push_back(std::move(v));
  }
  RETURN_IF_ERROR(db.Write(
      sql.update_node_status, std::move(row),
      absl::NotFoundError(absl::StrCat("node \"", node.name, "\" not found"))));
  for (const Device& d : node.devices) {
    std::vector<SqlValue> health = {node.name, d.id};
    for (SqlValue& v : ValuesOf(DevicesTable(), d, {"healthy"})) {
      health.push_back(std::move(v));
    }
    RETURN_IF_ERROR(db.Write(
        sql.update_device_health, std::move(health),
        absl::NotFoundError(absl::StrCat("device \"", d.id, "\" of node \"",
                                         node.name, "\" not found"))));
  }
  return absl::OkStatus();
}

absl::Status Write(const Statements& sql, const DeleteNodeMutation& m,
                   RowWriter& db) {
  RETURN_IF_ERROR(db.Write(
      sql.delete_node, {m.name},
      absl::NotFoundError(absl::StrCat("node \"", m.name, "\" not found"))));
  return Run(db, sql.delete_orphan_tpu_slices, {});
}

absl::Status Write(const Statements& sql, const PutAllocationMutation& m,
                   RowWriter& db) {
  const Allocation& a = m.allocation;
  if (m.created) {
    RETURN_IF_ERROR(
        Run(db, sql.insert_allocation, RowOf(AllocationsTable(), a)));
    for (const auto& [key, value] : a.node_selector) {
      RETURN_IF_ERROR(Run(
          db, sql.insert_selector,
          RowOf(AllocationNodeSelectorTable(), KeyValue{key, value}, a.id)));
    }
    for (size_t i = 0; i < a.targets.size(); ++i) {
      RETURN_IF_ERROR(
          Run(db, sql.insert_target,
              RowOf(AllocationTargetsTable(), a.targets[i], a.id, i)));
    }
    for (size_t i = 0; i < a.device_spellings.size(); ++i) {
      RETURN_IF_ERROR(Run(db, sql.insert_spelling,
                          RowOf(AllocationDeviceSpellingsTable(),
                                SpellingRow{a.device_spellings[i]}, a.id, i)));
    }
    for (size_t i = 0; i < a.devices.size(); ++i) {
      RETURN_IF_ERROR(
          Run(db, sql.insert_allocated_device,
              RowOf(AllocationDevicesTable(), a.devices[i], a.id, i)));
    }
  } else {
    std::vector<SqlValue> row = {a.id};
    for (SqlValue& v :
         ValuesOf(AllocationsTable(), a,
                  std::vector<const char*>(std::begin(kAllocationLifeColumns),
                                           std::end(kAllocationLifeColumns)))) {
      row.push_back(std::move(v));
    }
    RETURN_IF_ERROR(db.Write(sql.update_allocation, std::move(row),
                             absl::NotFoundError(absl::StrCat(
                                 "allocation \"", a.id, "\" not found"))));
  }
  for (size_t i = 0; i < m.units.size(); ++i) {
    RETURN_IF_ERROR(Run(
        db, sql.upsert_unit,
        RowOf(AllocationUnitsTable(), UnitRow{m.units[i], a.live()}, a.id, i)));
  }
  return absl::OkStatus();
}

absl::Status Write(const Statements& sql, const DeleteAllocationMutation& m,
                   RowWriter& db) {
  return Run(db, sql.delete_allocation, {m.id});
}

absl::Status Write(const Statements& sql, const PutEventSequenceMutation& m,
                   RowWriter& db) {
  return db.Write(sql.update_event_sequence, {static_cast<int64_t>(m.last)},
                  absl::FailedPreconditionError(absl::StrCat(
                      "event sequence ", m.last, " is below the stored one")));
}

}  // namespace

absl::StatusOr<std::vector<Node>> LoadNodeRows(RowSource& db) {
  const Statements& sql = StatementsOf(db.dialect());
  std::map<std::string, Node> nodes;
  RETURN_IF_ERROR(
      db.Query(sql.select_nodes, [&](RowReader& row) -> absl::Status {
        Node node;
        RETURN_IF_ERROR(ReadRow(NodesTable(), row, node));
        std::string name = node.name;
        nodes.emplace(std::move(name), std::move(node));
        return absl::OkStatus();
      }));
  RETURN_IF_ERROR(
      db.Query(sql.select_labels, [&](RowReader& row) -> absl::Status {
        KeyValue label;
        RETURN_IF_ERROR(ReadRow(NodeLabelsTable(), row, label));
        nodes[row.Text(0)].labels[label.key] = std::move(label.value);
        return absl::OkStatus();
      }));
  // MIG slices first, so each device is built whole in one pass.
  std::map<std::string, std::vector<MigSlice>> slices;
  RETURN_IF_ERROR(
      db.Query(sql.select_mig_slices, [&](RowReader& row) -> absl::Status {
        MigSlice slice;
        RETURN_IF_ERROR(ReadRow(MigSlicesTable(), row, slice));
        slices[row.Text(0)].push_back(std::move(slice));
        return absl::OkStatus();
      }));
  std::map<std::string, std::vector<MigSlice>> plan_slices;
  RETURN_IF_ERROR(
      db.Query(sql.select_mig_plan_slices, [&](RowReader& row) -> absl::Status {
        MigSlice slice;
        RETURN_IF_ERROR(ReadRow(MigPlanSlicesTable(), row, slice));
        plan_slices[row.Text(0)].push_back(std::move(slice));
        return absl::OkStatus();
      }));
  std::map<std::string, std::vector<DeviceLink>> links;
  RETURN_IF_ERROR(
      db.Query(sql.select_device_links, [&](RowReader& row) -> absl::Status {
        DeviceLink link;
        RETURN_IF_ERROR(ReadRow(DeviceLinksTable(), row, link));
        links[row.Text(0)].push_back(std::move(link));
        return absl::OkStatus();
      }));
  RETURN_IF_ERROR(
      db.Query(sql.select_devices, [&](RowReader& row) -> absl::Status {
        Device d;
        RETURN_IF_ERROR(ReadRow(DevicesTable(), row, d));
        if (auto it = slices.find(d.id); it != slices.end()) {
          d.mig_slices = std::move(it->second);
        }
        if (auto it = plan_slices.find(d.id);
            it != plan_slices.end() && d.mig_plan.has_value()) {
          d.mig_plan->slices = std::move(it->second);
        }
        if (auto it = links.find(d.id); it != links.end()) {
          d.links = std::move(it->second);
        }
        nodes[row.Text(0)].devices.push_back(std::move(d));
        return absl::OkStatus();
      }));
  std::vector<Node> out;
  out.reserve(nodes.size());
  for (auto& [name, node] : nodes) out.push_back(std::move(node));
  return out;
}

absl::StatusOr<std::vector<StoredAllocation>> LoadAllocationRows(
    RowSource& db) {
  const Statements& sql = StatementsOf(db.dialect());
  std::map<std::string, StoredAllocation> out;
  RETURN_IF_ERROR(
      db.Query(sql.select_allocations, [&](RowReader& row) -> absl::Status {
        Allocation a;
        RETURN_IF_ERROR(ReadRow(AllocationsTable(), row, a));
        std::string id = a.id;
        out[id].allocation = std::move(a);
        return absl::OkStatus();
      }));
  RETURN_IF_ERROR(db.Query(
      sql.select_allocated_devices, [&](RowReader& row) -> absl::Status {
        AllocatedDevice d;
        RETURN_IF_ERROR(ReadRow(AllocationDevicesTable(), row, d));
        out[row.Text(0)].allocation.devices.push_back(std::move(d));
        return absl::OkStatus();
      }));
  RETURN_IF_ERROR(
      db.Query(sql.select_targets, [&](RowReader& row) -> absl::Status {
        PlacementTarget t;
        RETURN_IF_ERROR(ReadRow(AllocationTargetsTable(), row, t));
        out[row.Text(0)].allocation.targets.push_back(std::move(t));
        return absl::OkStatus();
      }));
  RETURN_IF_ERROR(
      db.Query(sql.select_spellings, [&](RowReader& row) -> absl::Status {
        SpellingRow s;
        RETURN_IF_ERROR(ReadRow(AllocationDeviceSpellingsTable(), row, s));
        out[row.Text(0)].allocation.device_spellings.push_back(
            std::move(s.spelling));
        return absl::OkStatus();
      }));
  RETURN_IF_ERROR(
      db.Query(sql.select_selectors, [&](RowReader& row) -> absl::Status {
        KeyValue s;
        RETURN_IF_ERROR(ReadRow(AllocationNodeSelectorTable(), row, s));
        out[row.Text(0)].allocation.node_selector[s.key] = std::move(s.value);
        return absl::OkStatus();
      }));
  RETURN_IF_ERROR(
      db.Query(sql.select_units, [&](RowReader& row) -> absl::Status {
        UnitRow u;
        RETURN_IF_ERROR(ReadRow(AllocationUnitsTable(), row, u));
        out[row.Text(0)].units.push_back(std::move(u.unit));
        return absl::OkStatus();
      }));
  std::vector<StoredAllocation> result;
  result.reserve(out.size());
  for (auto& [id, a] : out) result.push_back(std::move(a));
  return result;
}

absl::StatusOr<std::optional<uint64_t>> LoadEventSequenceRow(RowSource& db) {
  std::optional<uint64_t> last;
  RETURN_IF_ERROR(db.Query(StatementsOf(db.dialect()).select_event_sequence,
                           [&](RowReader& row) -> absl::Status {
                             ASSIGN_OR_RETURN(const int64_t v, row.Int(0));
                             last = static_cast<uint64_t>(v);
                             return absl::OkStatus();
                           }));
  return last;
}

absl::Status WriteMutationRows(const Mutation& mutation, RowWriter& db) {
  const Statements& sql = StatementsOf(db.dialect());
  return std::visit([&](const auto& m) { return Write(sql, m, db); }, mutation);
}

}  // namespace accelsched
